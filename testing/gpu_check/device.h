// One CUDA device as gpu_check drives it: its primary context, the PTX module with the two
// stamping kernels, and the stamps buffer they write.
//
//   spin(u64 ns, u64* stamps, u32 index)          every thread reads %globaltimer until ns have
//                                                 passed since its own start;
//   arith(u64 iterations, u64* stamps, u32 index) a chain of fused multiply-adds per thread, so
//                                                 its time follows the SM clock;
//
// and in both, thread 0 of block 0 (1-D launches) writes its launch's record of kStampsPerLaunch
// values at stamps[kStampsPerLaunch * index]: its start and end %globaltimer, then the gaps in
// which it was switched out (analysis.h). Every launch takes the next index, so after ReadStamps
// every kernel's span, and the time within it that it really ran, is known on the device's own
// clock.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Device> d, Device::Open(cuda, 0, 100000));
//   RETURN_IF_ERROR(d->Launch(stream, Kernel::Spin(200000), /*tag=*/0));
//   RETURN_IF_ERROR(d->ReadStamps());
//   std::vector<Interval> busy = d->Intervals(0, &missing);
//
// Thread-compatible: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "analysis.h"
#include "driver.h"

namespace tessera::gpu_check {

// The PTX module (ISA 7.0, target sm_70: the JIT compiles it for any later GPU).
extern const char kKernelsPtx[];

struct Kernel {
  enum Kind { kSpin, kArith };
  Kind kind = kSpin;
  uint64_t arg = 0;  // spin: nanoseconds; arith: iterations
  static Kernel Spin(uint64_t ns) { return {kSpin, ns}; }
  static Kernel Arith(uint64_t iterations) { return {kArith, iterations}; }
};

class Device {
 public:
  // Initialises the driver, makes device `ordinal`'s primary context current, loads the module
  // (a JIT error's log is in the message) and allocates room for `capacity` launches' stamps
  // (none when 0: the memory mode allocates nothing else).
  static Result<std::unique_ptr<Device>> Open(const Cuda& cuda, int ordinal, size_t capacity);

  const Cuda& cuda() const { return cuda_; }
  int sms() const { return sms_; }
  size_t launches() const { return tags_.size(); }
  size_t room() const { return capacity_ - tags_.size(); }

  // Launches `k` on `stream` at the next index, remembering `tag` for it: spin as 1 block of 32
  // threads, arith as one wave (one block of 128 threads per SM). ResourceExhausted when the
  // stamps buffer is full.
  Status Launch(CUstream stream, Kernel k, int tag);

  // A spin(0) on the device's own idle stream between two CLOCK_REALTIME readings (tag -1).
  Result<ClockProbe> Probe();
  // `count` probes.
  Result<std::vector<ClockProbe>> Probes(int count);

  // The arith iterations that take about `target_us` now (a few calibration launches, tag -1).
  Result<uint64_t> ArithIterationsFor(double target_us);

  // Waits for every launch and copies the stamps back.
  Status ReadStamps();
  // The intervals of the launches tagged `tag` (any tag >= 0 when kAnyLoad), from ReadStamps'
  // copy; launches whose stamps are missing are counted in *missing.
  static constexpr int kAnyLoad = -2;
  std::vector<Interval> Intervals(int tag, size_t* missing) const;
  // The gaps (switched out) within the spans of the launches Intervals(tag) gives.
  std::vector<Interval> Gaps(int tag) const;
  // The interval of launch `index` from ReadStamps' copy; nullopt when its stamps are missing.
  std::optional<Interval> IntervalAt(size_t index) const;

  CUstream own_stream() const { return own_stream_; }

 private:
  explicit Device(const Cuda& cuda) : cuda_(cuda) {}
  Result<uint64_t> StampOf(size_t index, int which);
  // The records of the launches tagged `tag` (as Intervals), concatenated.
  std::vector<uint64_t> Chosen(int tag) const;

  const Cuda& cuda_;
  CUcontext ctx_ = nullptr;
  CUfunction spin_ = nullptr;
  CUfunction arith_ = nullptr;
  CUstream own_stream_ = nullptr;
  CUdeviceptr stamps_ = 0;
  size_t capacity_ = 0;
  int sms_ = 1;
  std::vector<int> tags_;         // per launch index
  std::vector<uint64_t> copied_;  // ReadStamps' copy
};

// CLOCK_REALTIME and CLOCK_MONOTONIC in nanoseconds.
int64_t RealtimeNs();
int64_t MonotonicNs();
// Sleeps `ns` (nanosleep, resumed after signals).
void SleepNs(int64_t ns);

}  // namespace tessera::gpu_check
