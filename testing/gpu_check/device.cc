#include "device.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace tessera::gpu_check {

// Register use: %rd1 the argument (ns or iterations), %rd2 the stamps pointer, %r1 the index,
// %rd8 the launch's record (the index scaled by 128 bytes, 16 u64, with mul.wide.u32), %rd3 the
// start and %rd5 the latest %globaltimer, %rd9 the reading before it, %rd10 the next gap slot
// and %rd11 the record's end; %p2 is true in the recording thread (thread 0 of block 0).
//
// Preemption: without MPS the processes' contexts are time-sliced and a kernel running when its
// context's slice ends is switched out and resumed later, so its start-to-end span holds the
// other process's time. The recording thread reads %globaltimer over and over (spin: every
// iteration; arith: every 64 iterations, a few hundred nanoseconds), and a step of more than
// 10 us between two readings is a time it did not run: it records the step as a gap (up to
// kGapSlots), and with more gaps than slots writes end 0, so the launch counts as missing
// rather than as time it did not have. arith keeps its result alive with a store no thread
// makes (the value is never negative), so the JIT cannot drop the loop.
// Both kernels' pieces, with the registers above: the recording thread's predicate and record
// (PTX_RECORD_SETUP, which also takes the start), a step of %globaltimer from %rd9 to %rd5 over
// 10 us recorded as a gap (PTX_GAP_CHECK), and the record's start and end, end 0 after more gaps
// than slots (PTX_RECORD_END, in the recording thread only).
#define PTX_RECORD_SETUP                 \
  "\tmov.u32 \t%r2, %tid.x;\n"           \
  "\tmov.u32 \t%r3, %ctaid.x;\n"         \
  "\tor.b32 \t%r4, %r2, %r3;\n"          \
  "\tsetp.eq.s32 \t%p2, %r4, 0;\n"       \
  "\tcvta.to.global.u64 \t%rd6, %rd2;\n" \
  "\tmul.wide.u32 \t%rd7, %r1, 128;\n"   \
  "\tadd.s64 \t%rd8, %rd6, %rd7;\n"      \
  "\tadd.s64 \t%rd10, %rd8, 16;\n"       \
  "\tadd.s64 \t%rd11, %rd8, 128;\n"      \
  "\tmov.u64 \t%rd3, %globaltimer;\n"    \
  "\tmov.u64 \t%rd9, %rd3;\n"
#define PTX_GAP_CHECK                         \
  "\tsub.s64 \t%rd12, %rd5, %rd9;\n"          \
  "\tsetp.gt.u64 \t%p3, %rd12, 10000;\n"      \
  "\tand.pred \t%p3, %p3, %p2;\n"             \
  "\tsetp.lt.u64 \t%p4, %rd10, %rd11;\n"      \
  "\tand.pred \t%p4, %p4, %p3;\n"             \
  "\t@%p4 st.global.u64 \t[%rd10], %rd9;\n"   \
  "\t@%p4 st.global.u64 \t[%rd10+8], %rd5;\n" \
  "\t@%p3 add.s64 \t%rd10, %rd10, 16;\n"
#define PTX_RECORD_END                   \
  "\tst.global.u64 \t[%rd8], %rd3;\n"    \
  "\tsetp.gt.u64 \t%p5, %rd10, %rd11;\n" \
  "\tselp.b64 \t%rd13, 0, %rd5, %p5;\n"  \
  "\tst.global.u64 \t[%rd8+8], %rd13;\n"

const char kKernelsPtx[] = R"PTX(
.version 7.0
.target sm_70
.address_size 64

.visible .entry spin(
	.param .u64 spin_param_ns,
	.param .u64 spin_param_stamps,
	.param .u32 spin_param_index
)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<14>;

	ld.param.u64 	%rd1, [spin_param_ns];
	ld.param.u64 	%rd2, [spin_param_stamps];
	ld.param.u32 	%r1, [spin_param_index];
)PTX" PTX_RECORD_SETUP R"PTX(	add.s64 	%rd4, %rd3, %rd1;
$L_spin_loop:
	mov.u64 	%rd5, %globaltimer;
)PTX" PTX_GAP_CHECK R"PTX(	mov.u64 	%rd9, %rd5;
	setp.lt.u64 	%p1, %rd5, %rd4;
	@%p1 bra 	$L_spin_loop;
	@!%p2 bra 	$L_spin_exit;
)PTX" PTX_RECORD_END R"PTX($L_spin_exit:
	ret;
}

.visible .entry arith(
	.param .u64 arith_param_iterations,
	.param .u64 arith_param_stamps,
	.param .u32 arith_param_index
)
{
	.reg .pred 	%p<7>;
	.reg .b32 	%r<5>;
	.reg .f32 	%f<6>;
	.reg .b64 	%rd<15>;

	ld.param.u64 	%rd1, [arith_param_iterations];
	ld.param.u64 	%rd2, [arith_param_stamps];
	ld.param.u32 	%r1, [arith_param_index];
)PTX" PTX_RECORD_SETUP R"PTX(	cvt.rn.f32.u32 	%f1, %r2;
	mov.f32 	%f2, 0f3F800000;
	mov.f32 	%f3, 0f3F7FFFEF;
	mov.f32 	%f4, 0f3F800000;
	mov.f32 	%f5, 0f00000000;
	mov.u64 	%rd4, 0;
	setp.eq.u64 	%p1, %rd1, 0;
	@%p1 bra 	$L_arith_after_loop;
$L_arith_loop:
	fma.rn.f32 	%f1, %f1, %f3, %f2;
	fma.rn.f32 	%f2, %f2, %f3, %f4;
	add.s64 	%rd4, %rd4, 1;
	and.b64 	%rd14, %rd4, 63;
	setp.eq.u64 	%p6, %rd14, 0;
	and.pred 	%p6, %p6, %p2;
	@!%p6 bra 	$L_arith_next;
	mov.u64 	%rd5, %globaltimer;
)PTX" PTX_GAP_CHECK R"PTX(	mov.u64 	%rd9, %rd5;
$L_arith_next:
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L_arith_loop;
$L_arith_after_loop:
	mov.u64 	%rd5, %globaltimer;
)PTX" PTX_GAP_CHECK R"PTX(	setp.lt.f32 	%p5, %f1, %f5;
	@%p5 st.global.f32 	[%rd8], %f1;
	@!%p2 bra 	$L_arith_exit;
)PTX" PTX_RECORD_END R"PTX($L_arith_exit:
	ret;
}
)PTX";

#undef PTX_RECORD_SETUP
#undef PTX_GAP_CHECK
#undef PTX_RECORD_END

namespace {

// CUjit_option values of cuda.h (the project's header declares only CU_JIT_MAX_REGISTERS).
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

Result<CUmodule> LoadModule(const Cuda& cuda) {
  CUmodule module = nullptr;
  CUresult rc = cuda.cuModuleLoadData(&module, kKernelsPtx);
  if (rc == CUDA_SUCCESS) return module;
  // Again with the JIT's error log, to say what is wrong with the PTX.
  char log[4096] = {};
  CUjit_option options[] = {static_cast<CUjit_option>(kJitErrorLogBuffer),
                            static_cast<CUjit_option>(kJitErrorLogBufferSizeBytes)};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof(log)})};
  CUresult again = cuda.cuModuleLoadDataEx(&module, kKernelsPtx, 2, options, values);
  if (again == CUDA_SUCCESS) return module;  // a transient failure
  log[sizeof(log) - 1] = '\0';
  return Internal("cuModuleLoadData(gpu_check's PTX): " + cuda.Describe(rc) +
                  (log[0] != '\0' ? std::string("; JIT log: ") + log : std::string()));
}

}  // namespace

Result<std::unique_ptr<Device>> Device::Open(const Cuda& cuda, int ordinal, size_t capacity) {
  std::unique_ptr<Device> d(new Device(cuda));
  CU_RETURN_IF_ERROR(cuda, cuda.cuInit(0));
  CUdevice dev = 0;
  CU_RETURN_IF_ERROR(cuda, cuda.cuDeviceGet(&dev, ordinal));
  CU_RETURN_IF_ERROR(
      cuda, cuda.cuDeviceGetAttribute(&d->sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  d->sms_ = std::max(d->sms_, 1);
  CU_RETURN_IF_ERROR(cuda, cuda.cuDevicePrimaryCtxRetain(&d->ctx_, dev));
  CU_RETURN_IF_ERROR(cuda, cuda.cuCtxSetCurrent(d->ctx_));
  ASSIGN_OR_RETURN(CUmodule module, LoadModule(cuda));
  CU_RETURN_IF_ERROR(cuda, cuda.cuModuleGetFunction(&d->spin_, module, "spin"));
  CU_RETURN_IF_ERROR(cuda, cuda.cuModuleGetFunction(&d->arith_, module, "arith"));
  CU_RETURN_IF_ERROR(cuda, cuda.cuStreamCreate(&d->own_stream_, CU_STREAM_NON_BLOCKING));
  if (capacity > 0) {
    size_t bytes = capacity * kStampsPerLaunch * sizeof(uint64_t);
    CU_RETURN_IF_ERROR(cuda, cuda.cuMemAlloc_v2(&d->stamps_, bytes));
    CU_RETURN_IF_ERROR(cuda, cuda.cuMemsetD8_v2(d->stamps_, 0, bytes));
    // The memset runs on the legacy stream, which non-blocking streams do not wait for.
    CU_RETURN_IF_ERROR(cuda, cuda.cuCtxSynchronize());
    d->capacity_ = capacity;
    d->tags_.reserve(capacity);
  }
  return d;
}

Status Device::Launch(CUstream stream, Kernel k, int tag) {
  if (tags_.size() >= capacity_) {
    return ResourceExhausted("the stamps buffer is full (" + std::to_string(capacity_) +
                             " launches)");
  }
  uint64_t arg = k.arg;
  CUdeviceptr stamps = stamps_;
  uint32_t index = static_cast<uint32_t>(tags_.size());
  void* params[] = {&arg, &stamps, &index};
  bool spin = k.kind == Kernel::kSpin;
  unsigned grid = spin ? 1 : static_cast<unsigned>(sms_);
  unsigned block = spin ? 32 : 128;
  CU_RETURN_IF_ERROR(cuda_, cuda_.cuLaunchKernel(spin ? spin_ : arith_, grid, 1, 1, block, 1, 1, 0,
                                                 stream, params, nullptr));
  tags_.push_back(tag);
  return Status::Ok();
}

Result<uint64_t> Device::StampOf(size_t index, int which) {
  uint64_t value = 0;
  CU_RETURN_IF_ERROR(
      cuda_, cuda_.cuMemcpyDtoH_v2(&value, stamps_ + (kStampsPerLaunch * index + which) * 8, 8));
  return value;
}

Result<ClockProbe> Device::Probe() {
  ClockProbe p;
  p.host_before_ns = RealtimeNs();
  RETURN_IF_ERROR(Launch(own_stream_, Kernel::Spin(0), -1));
  CU_RETURN_IF_ERROR(cuda_, cuda_.cuStreamSynchronize(own_stream_));
  p.host_after_ns = RealtimeNs();
  ASSIGN_OR_RETURN(uint64_t start, StampOf(launches() - 1, 0));
  p.device_ns = static_cast<int64_t>(start);
  return p;
}

Result<std::vector<ClockProbe>> Device::Probes(int count) {
  std::vector<ClockProbe> out;
  for (int k = 0; k < count; ++k) {
    ASSIGN_OR_RETURN(ClockProbe p, Probe());
    out.push_back(p);
  }
  return out;
}

Result<uint64_t> Device::ArithIterationsFor(double target_us) {
  uint64_t base = 1 << 14;
  for (int attempt = 0; attempt < 4; ++attempt, base *= 16) {
    std::vector<double> spans;
    for (int k = 0; k < 3; ++k) {
      RETURN_IF_ERROR(Launch(own_stream_, Kernel::Arith(base), -1));
      CU_RETURN_IF_ERROR(cuda_, cuda_.cuStreamSynchronize(own_stream_));
      ASSIGN_OR_RETURN(uint64_t start, StampOf(launches() - 1, 0));
      ASSIGN_OR_RETURN(uint64_t end, StampOf(launches() - 1, 1));
      if (start == 0 || end < start) return Internal("arith wrote no stamps while calibrating");
      spans.push_back(static_cast<double>(end - start));
    }
    std::sort(spans.begin(), spans.end());
    double median_ns = spans[1];
    if (median_ns < 20000 && attempt < 3) continue;  // too short to scale from: longer
    double iterations = static_cast<double>(base) * target_us * 1e3 / std::max(median_ns, 1.0);
    return static_cast<uint64_t>(std::clamp(iterations, 1.0, 1e12));
  }
  return Internal("arith calibration did not converge");
}

Status Device::ReadStamps() {
  CU_RETURN_IF_ERROR(cuda_, cuda_.cuCtxSynchronize());
  copied_.assign(kStampsPerLaunch * tags_.size(), 0);
  if (!tags_.empty()) {
    CU_RETURN_IF_ERROR(
        cuda_, cuda_.cuMemcpyDtoH_v2(copied_.data(), stamps_, copied_.size() * sizeof(uint64_t)));
  }
  return Status::Ok();
}

std::vector<uint64_t> Device::Chosen(int tag) const {
  std::vector<uint64_t> chosen;
  size_t n = std::min(tags_.size(), copied_.size() / kStampsPerLaunch);
  for (size_t k = 0; k < n; ++k) {
    if (tag == kAnyLoad ? tags_[k] >= 0 : tags_[k] == tag) {
      auto record = copied_.begin() + static_cast<ptrdiff_t>(kStampsPerLaunch * k);
      chosen.insert(chosen.end(), record, record + kStampsPerLaunch);
    }
  }
  return chosen;
}

std::vector<Interval> Device::Intervals(int tag, size_t* missing) const {
  std::vector<uint64_t> chosen = Chosen(tag);
  return IntervalsFromStamps(chosen, chosen.size() / kStampsPerLaunch, missing);
}

std::vector<Interval> Device::Gaps(int tag) const {
  std::vector<uint64_t> chosen = Chosen(tag);
  return GapsFromStamps(chosen, chosen.size() / kStampsPerLaunch);
}

std::optional<Interval> Device::IntervalAt(size_t index) const {
  size_t missing = 0;
  if (kStampsPerLaunch * (index + 1) > copied_.size()) return std::nullopt;
  auto record = copied_.begin() + static_cast<ptrdiff_t>(kStampsPerLaunch * index);
  std::vector<Interval> one = IntervalsFromStamps({record, record + kStampsPerLaunch}, 1, &missing);
  if (one.empty()) return std::nullopt;
  return one[0];
}

namespace {

int64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

int64_t RealtimeNs() {
  return Now(CLOCK_REALTIME);
}
int64_t MonotonicNs() {
  return Now(CLOCK_MONOTONIC);
}

void SleepNs(int64_t ns) {
  if (ns <= 0) return;
  timespec left = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

}  // namespace tessera::gpu_check
