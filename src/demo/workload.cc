// tessera-demo-workload: the GPU program the demo runs inside its containers (under
// libtessera-cuda.so, over simgpu or a real driver). It looks at GPU 0 the way a user would and
// prints what it saw, one `key=value` line per finding (the demo checks them) after a line for
// people:
//
//   1. NVML, as nvidia-smi does: name and memory total  -> nvml.name, nvml.total_mib
//   2. allocates in 64 MiB steps until the driver says out of memory -> oom.allocated_mib,
//   oom.error
//   3. keeps the GPU busy with 2 ms kernels for 3 s and reads its share of the device's time as
//      an operator would (nvidia-smi pmon): NVML's utilisation samples of its own process, from
//      its second second on -> compute.percent. Counting kernels would not do: a real kernel's
//      time varies with the clocks (and simgpu's by its drift and jitter).
//
//   4. NVML's process list, as nvidia-smi shows it -> nvml.own_process_listed (1 when it lists this
//      process under its own PID: in a container, the library names processes by their PIDs there)
//
// With `--nvml-only`, step 1 alone (tests that start many containers at once). With `--hold MIB`,
// step 1, then MIB MiB allocated in 64 MiB steps (as far as the driver allows) and held until the
// process is killed -> hold.allocated_mib (tests of a limit that containers share). With
// `--share export|import DIR`, step 1, then memory shared between two containers of a pod through
// DIR (workload_share.h) -> share.*. With `--nccl`, step 1, then NCCL's set-up over cuMem on GPUs 0
// and 1 and the per-GPU limits checked on both (workload_nccl.h) -> mem.*, nvml.gpu*, nccl.*,
// limit.*. With `--fill MIB [--create] [--wait FILE]`, step 1, then a job over MIB MiB of virtual
// device memory, part of it possibly served from host memory (workload_spill.h) -> mem.*, fill.*.
// Exits 0 when every call it needed worked (an out-of-memory answer is the expected end of
// step 2), 1 otherwise. Single-threaded.
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "abi/cuda_driver.h"
#include "abi/host_pids.h"
#include "abi/library_env.h"
#include "abi/nvml.h"
#include "workload_nccl.h"
#include "workload_share.h"
#include "workload_spill.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kStep = 64 * kMiB;
constexpr int kKernelUs = 2000;
constexpr uint64_t kComputeUs = 3'000'000;
// NVML's samples read: those stamped from this long after the start on. With one sample per
// process and period each covers its period; where the driver samples one process per instant
// (an H200), each covers the second before its stamp: either way they lie within the run.
constexpr uint64_t kSkipUs = 1'000'000;
constexpr uint64_t kPollGapUs = 50'000;  // under NVML's shortest period (1/6 s), to miss none
// How long the pids file may take to list this process: 4 of the node agent's default refreshes.
constexpr uint64_t kPidsWaitUs = 250'000;
constexpr int kPidsWaits = 16;

// NVML stamps its samples in CPU microseconds of the real-time clock.
uint64_t NowUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

bool Ok(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: %s failed: CUresult %d\n", what, static_cast<int>(rc));
  return false;
}

bool ShowNvml() {
  nvmlDevice_t device;
  char name[96] = {0};
  nvmlMemory_t memory;
  if (nvmlInit() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex(0, &device) != NVML_SUCCESS ||
      nvmlDeviceGetName(device, name, sizeof(name)) != NVML_SUCCESS ||
      nvmlDeviceGetMemoryInfo(device, &memory) != NVML_SUCCESS) {
    std::fprintf(stderr, "workload: NVML could not describe GPU 0\n");
    return false;
  }
  std::printf("nvidia-smi view: GPU 0  %s  %lluMiB / %lluMiB\n", name,
              static_cast<unsigned long long>(memory.used / kMiB),
              static_cast<unsigned long long>(memory.total / kMiB));
  std::printf("nvml.name=%s\nnvml.total_mib=%llu\n", name,
              static_cast<unsigned long long>(memory.total / kMiB));
  nvmlShutdown();
  return true;
}

// NVML's compute processes on GPU 0, as nvidia-smi lists them under "Processes": in a container
// without the host's PID namespace, Tessera's library names them by their PIDs in the container
// (the driver knows host PIDs only). Prints them, and whether this process is among them.
bool ShowProcesses() {
  nvmlDevice_t device;
  nvmlProcessInfo_t infos[64];
  unsigned count = 64;
  if (nvmlInit() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex(0, &device) != NVML_SUCCESS ||
      nvmlDeviceGetComputeRunningProcesses(device, &count, infos) != NVML_SUCCESS) {
    std::fprintf(stderr, "workload: NVML could not list GPU 0's processes\n");
    return false;
  }
  bool listed = false;
  std::printf("nvidia-smi processes:");
  for (unsigned i = 0; i < count; ++i) {
    std::printf("  PID %u %lluMiB", infos[i].pid,
                static_cast<unsigned long long>(infos[i].usedGpuMemory / kMiB));
    listed = listed || infos[i].pid == static_cast<unsigned>(getpid());
  }
  std::printf("%s\nnvml.own_process_listed=%d\n", count == 0 ? "  none" : "", listed ? 1 : 0);
  nvmlShutdown();
  return true;
}

bool FillMemory() {
  std::vector<CUdeviceptr> blocks;
  CUresult rc = CUDA_SUCCESS;
  while (blocks.size() < 1024 * 1024) {  // bounded: 64 TiB
    CUdeviceptr p = 0;
    rc = cuMemAlloc(&p, kStep);
    if (rc != CUDA_SUCCESS) break;
    blocks.push_back(p);
  }
  uint64_t allocated = blocks.size() * kStep / kMiB;
  std::printf("allocated %llu MiB in 64 MiB steps; the next step got %s\n",
              static_cast<unsigned long long>(allocated),
              rc == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "another error");
  std::printf("oom.allocated_mib=%llu\noom.error=%d\n", static_cast<unsigned long long>(allocated),
              static_cast<int>(rc));
  for (CUdeviceptr p : blocks) {
    if (!Ok(cuMemFree(p), "cuMemFree")) return false;
  }
  return rc == CUDA_ERROR_OUT_OF_MEMORY;
}

// Allocates up to `mib` MiB in 64 MiB steps, says how much it got and holds it: never returns.
[[noreturn]] void HoldMemory(uint64_t mib) {
  uint64_t allocated = 0;
  while (allocated + kStep / kMiB <= mib) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, kStep) != CUDA_SUCCESS) break;
    allocated += kStep / kMiB;
  }
  std::printf("hold.allocated_mib=%llu\n", static_cast<unsigned long long>(allocated));
  std::fflush(stdout);
  for (;;) pause();
}

// This process's PID as NVML names it: its host PID from Tessera's pids file
// (src/abi/host_pids.h) in a container, getpid() where there is no such file. 0 while the file
// does not list it (a process younger than the node agent's last refresh).
pid_t OwnHostPid() {
  std::ifstream file(TESSERA_PIDS_PATH);
  if (!file) {
    const char* path = std::getenv(TESSERA_ENV_PIDS_FILE);
    if (path == nullptr || path[0] == '\0') return getpid();
    file.open(path);
    if (!file) return getpid();
  }
  std::string line;
  if (!std::getline(file, line) || line != "version=" + std::to_string(TESSERA_PIDS_VERSION)) {
    return 0;
  }
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    pid_t host = 0;
    pid_t own = 0;
    if (fields >> host >> own && own == getpid()) return host;
  }
  return 0;
}

// NVML's utilisation samples of GPU 0, gathered by polling (a driver may return only each
// process's newest sample). They are told apart by PID at the end: the node agent writes the pids
// file a while after the container starts.
class DeviceUtilization {
 public:
  ~DeviceUtilization() {
    if (open_) nvmlShutdown();
  }

  bool Open() {
    open_ = nvmlInit() == NVML_SUCCESS;
    if (!open_ || nvmlDeviceGetHandleByIndex(0, &device_) != NVML_SUCCESS) {
      std::fprintf(stderr, "workload: NVML could not open GPU 0\n");
      return false;
    }
    return true;
  }

  void Poll(uint64_t now_us) {
    if (now_us - polled_us_ < kPollGapUs) return;
    polled_us_ = now_us;
    unsigned count = 0;
    nvmlReturn_t rc = nvmlDeviceGetProcessUtilization(device_, nullptr, &count, last_seen_us_);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || count == 0) return;  // NOT_FOUND: nothing new
    std::vector<nvmlProcessUtilizationSample_t> got(count + 16);
    count = static_cast<unsigned>(got.size());
    if (nvmlDeviceGetProcessUtilization(device_, got.data(), &count, last_seen_us_) !=
        NVML_SUCCESS) {
      return;
    }
    for (unsigned i = 0; i < count; ++i) {
      if (got[i].timeStamp > last_seen_us_) last_seen_us_ = got[i].timeStamp;
      samples_.push_back(got[i]);
    }
  }

  // The mean smUtil of this process's samples stamped within [from_us, to_us], the process named
  // by `host_pid` (the driver's name for it) or by getpid() (Tessera's library answers NVML for
  // the container, in its PID namespace); false when none.
  bool MeanPercent(pid_t host_pid, uint64_t from_us, uint64_t to_us, double* percent,
                   int* used) const {
    double sum = 0;
    *used = 0;
    for (const nvmlProcessUtilizationSample_t& s : samples_) {
      bool mine =
          s.pid == static_cast<unsigned>(host_pid) || s.pid == static_cast<unsigned>(getpid());
      if (!mine || s.timeStamp < from_us || s.timeStamp > to_us) continue;
      sum += s.smUtil;
      ++*used;
    }
    if (*used == 0) return false;
    *percent = sum / *used;
    return true;
  }

 private:
  bool open_ = false;
  nvmlDevice_t device_{};
  uint64_t polled_us_ = 0;
  uint64_t last_seen_us_ = 0;
  std::vector<nvmlProcessUtilizationSample_t> samples_;
};

bool MeasureCompute() {
  static const char kImage[] = "tessera demo workload";
  CUmodule module;
  CUfunction kernel;
  CUstream stream;
  DeviceUtilization nvml;
  if (!Ok(cuModuleLoadData(&module, kImage), "cuModuleLoadData") ||
      !Ok(cuModuleGetFunction(&kernel, module, "busy_2000us"), "cuModuleGetFunction") ||
      !Ok(cuStreamCreate(&stream, 0), "cuStreamCreate") || !nvml.Open()) {
    return false;
  }
  void* no_params[] = {nullptr};
  int launches = 0;
  uint64_t start = NowUs();
  uint64_t now = start;
  while (now - start < kComputeUs) {
    for (int i = 0; i < 5; ++i, ++launches) {
      if (!Ok(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, no_params, nullptr),
              "cuLaunchKernel")) {
        return false;
      }
    }
    if (!Ok(cuStreamSynchronize(stream), "cuStreamSynchronize")) return false;
    now = NowUs();
    nvml.Poll(now);
  }
  // The last period's sample comes at its end: wait for it, then ask once more.
  usleep(static_cast<useconds_t>(kPollGapUs));
  nvml.Poll(NowUs());
  double elapsed = static_cast<double>(now - start) * 1e-6;
  std::printf("ran %d kernels of 2 ms in %.2f s (%.1f%% of the time, were each exactly 2 ms)\n",
              launches, elapsed, 100.0 * launches * kKernelUs * 1e-6 / elapsed);
  pid_t host_pid = OwnHostPid();
  for (int wait = 0; host_pid == 0 && wait < kPidsWaits; ++wait) {
    usleep(static_cast<useconds_t>(kPidsWaitUs));
    host_pid = OwnHostPid();
  }
  if (host_pid == 0) {
    std::fprintf(stderr, "workload: the pids file does not list this process (PID %d)\n",
                 static_cast<int>(getpid()));
    return false;
  }
  double percent = 0;
  int used = 0;
  if (!nvml.MeanPercent(host_pid, start + kSkipUs, now, &percent, &used)) {
    std::fprintf(stderr,
                 "workload: NVML gave no utilisation sample of this process (host PID %d) "
                 "while it ran\n",
                 static_cast<int>(host_pid));
    return false;
  }
  std::printf(
      "NVML saw it use %.1f%% of the GPU's time (mean of %d samples from its second "
      "second on)\n",
      percent, used);
  std::printf("compute.percent=%.1f\n", percent);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!ShowNvml()) return 1;
  if (argc > 1 && std::strcmp(argv[1], "--nvml-only") == 0) return 0;
  CUdevice device;
  CUcontext context;
  if (!Ok(cuInit(0), "cuInit") || !Ok(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !Ok(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !Ok(cuCtxSetCurrent(context), "cuCtxSetCurrent")) {
    return 1;
  }
  if (argc > 2 && std::strcmp(argv[1], "--hold") == 0)
    HoldMemory(std::strtoull(argv[2], nullptr, 10));
  if (argc > 3 && std::strcmp(argv[1], "--share") == 0) {
    return tessera::workload::Share(argv[2], argv[3]);
  }
  if (argc > 1 && std::strcmp(argv[1], "--nccl") == 0) return tessera::workload::Nccl();
  if (argc > 1 && std::strcmp(argv[1], "--fill") == 0)
    return tessera::workload::Fill(argc - 2, argv + 2);
  bool ok = FillMemory() && MeasureCompute() && ShowProcesses();
  std::fflush(stdout);
  return ok ? 0 : 1;
}
