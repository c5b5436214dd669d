// hook_probe: a CUDA program that checks the behaviour of libtessera-cuda.so from the inside.
// Run under LD_PRELOAD=libtessera-cuda.so over simgpu (or a real driver) by hook_test.
//
//   hook_probe <route> <command> [args]      route: direct | runtime | runtime-ptds
//
// Each command checks what it can see itself and exits 0 when everything held, 1 with a message
// on stderr when something did not, 2 on a usage error. Sizes are in bytes.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "probe_api.h"

namespace tessera::hooktest {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGranule = 2 * kMiB;

Api api;
int failures = 0;
CUcontext primary = nullptr;  // the primary context Open made current

#define CHECK_THAT(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "probe: %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                   \
      std::fprintf(stderr, "\n");                                                          \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

#define CHECK_RC(call, want)                                                            \
  do {                                                                                  \
    CUresult rc_ = (call);                                                              \
    CHECK_THAT(rc_ == (want), "%s returned %d, want %d", #call, (int)rc_, (int)(want)); \
  } while (0)

constexpr uint64_t kAnyCharge = UINT64_MAX;  // Path(): some charge, its size unknown
// Path(): what the pool reserved for the allocation. A pool reserves in chunks of the driver's
// choosing: simgpu's of 2 MiB for smaller allocations, an H200's (driver 580) of 32 MiB for
// allocations of 1 KiB to 10 MiB.
constexpr uint64_t kPoolGrowth = UINT64_MAX - 1;

// The device memory `pool` holds (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT).
uint64_t PoolReserve(CUmemoryPool pool) {
  uint64_t reserved = 0;
  CHECK_RC(api.MemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
           CUDA_SUCCESS);
  return reserved;
}

uint64_t RoundUp(uint64_t n) {
  return (n + kGranule - 1) / kGranule * kGranule;
}

uint64_t Arg(char** argv, int argc, int i) {
  if (i >= argc) {
    std::fprintf(stderr, "probe: missing argument %d\n", i);
    std::exit(2);
  }
  return std::strtoull(argv[i], nullptr, 0);
}

// Initialises the driver and makes device `ordinal`'s primary context current.
void Open(int ordinal = 0) {
  CUresult rc = api.Init(0);
  if (rc != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cuInit returned %d\n", (int)rc);
    std::exit(1);
  }
  CUdevice dev;
  CUcontext ctx;
  if (api.DeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
      api.PrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || api.CtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cannot open device %d\n", ordinal);
    std::exit(1);
  }
  primary = ctx;
  // cuCtxGetDevice at version 13000 is the _v2 ABI (a context argument; NULL: the current one).
  CUdevice current = -1;
  if (api.CtxGetDevice(&current, nullptr) != CUDA_SUCCESS || current != dev) {
    std::fprintf(stderr, "probe: cuCtxGetDevice does not give device %d\n", ordinal);
    std::exit(1);
  }
}

// Usage the library reports: total - free of cuMemGetInfo.
uint64_t Used() {
  size_t free_bytes = 0, total = 0;
  if (api.MemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) return UINT64_MAX;
  return total - free_bytes;
}

// boundary <limit>: the exact last granule succeeds, the next byte fails.
int Boundary(uint64_t limit) {
  Open();
  uint64_t base = Used();
  uint64_t room = limit - base;
  CUdeviceptr a = 0, b = 0, c = 0;
  CHECK_RC(api.MemAlloc(&a, room - kGranule), CUDA_SUCCESS);
  CHECK_RC(api.MemAlloc(&b, kGranule), CUDA_SUCCESS);
  CHECK_THAT(Used() == limit, "used %llu, limit %llu", (unsigned long long)Used(),
             (unsigned long long)limit);
  CHECK_RC(api.MemAlloc(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.MemFree(b), CUDA_SUCCESS);
  CHECK_RC(api.MemAlloc(&b, kGranule - 1), CUDA_SUCCESS);  // rounds up to the last granule
  CHECK_RC(api.MemAlloc(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.MemFree(b), CUDA_SUCCESS);
  CHECK_RC(api.MemFree(a), CUDA_SUCCESS);
  CHECK_RC(api.MemAlloc(&a, room + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.MemAlloc(&a, room), CUDA_SUCCESS);
  CHECK_RC(api.MemFree(a), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "used %llu after freeing everything, %llu before",
             (unsigned long long)Used(), (unsigned long long)base);
  return failures ? 1 : 0;
}

// Checks that `alloc` charges `expected` bytes (kPoolGrowth: what `pool` reserved for it) and
// `release` gives them back.
template <typename Alloc, typename Release>
void Path(const char* name, uint64_t expected, Alloc alloc, Release release,
          CUmemoryPool pool = nullptr) {
  uint64_t before = Used();
  uint64_t reserve_before = expected == kPoolGrowth ? PoolReserve(pool) : 0;
  CUresult rc = alloc();
  CHECK_THAT(rc == CUDA_SUCCESS, "%s: allocation returned %d", name, (int)rc);
  if (rc != CUDA_SUCCESS) return;
  uint64_t during = Used();
  if (expected == kPoolGrowth) {
    expected = PoolReserve(pool) - reserve_before;
    CHECK_THAT(expected > 0, "%s: the pool did not grow", name);
  }
  if (expected == kAnyCharge) {
    CHECK_THAT(during > before, "%s: nothing charged", name);
  } else {
    CHECK_THAT(during - before == expected, "%s: charged %llu bytes, want %llu", name,
               (unsigned long long)(during - before), (unsigned long long)expected);
  }
  rc = release();
  CHECK_THAT(rc == CUDA_SUCCESS, "%s: free returned %d", name, (int)rc);
  CHECK_THAT(Used() == before, "%s: %llu bytes still charged after the free", name,
             (unsigned long long)(Used() - before));
}

// paths <limit> <ctxmem|any>: every allocation path charges, frees, and is refused over the
// limit. With "any" (a real driver) a context must cost something, whatever it is.
int Paths(uint64_t limit, const std::string& ctxmem_arg) {
  Open();
  const bool any = ctxmem_arg == "any";
  const uint64_t ctxmem = any ? Used() : std::strtoull(ctxmem_arg.c_str(), nullptr, 0);
  CHECK_THAT(Used() == ctxmem, "the primary context is charged %llu bytes, want %llu",
             (unsigned long long)Used(), (unsigned long long)ctxmem);
  CHECK_THAT(!any || ctxmem > 0, "the primary context is not charged");
  const uint64_t big = limit;  // never fits next to the context
  CUdeviceptr p = 0;
  size_t pitch = 0;
  Path(
      "cuMemAlloc", RoundUp(3 * kMiB), [&] { return api.MemAlloc(&p, 3 * kMiB); },
      [&] { return api.MemFree(p); });
  CHECK_RC(api.MemAlloc(&p, big), CUDA_ERROR_OUT_OF_MEMORY);
  {
    // The driver picks the pitch: the charge is pitch * height, rounded up.
    uint64_t before = Used();
    CHECK_RC(api.MemAllocPitch(&p, &pitch, 1000, 3000, 4), CUDA_SUCCESS);
    CHECK_THAT(Used() - before == RoundUp(uint64_t(pitch) * 3000),
               "cuMemAllocPitch: charged %llu, pitch %zu", (unsigned long long)(Used() - before),
               pitch);
    CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
    CHECK_THAT(Used() == before, "cuMemAllocPitch: still charged after the free");
  }
  CHECK_RC(api.MemAllocPitch(&p, &pitch, big, 1, 4), CUDA_ERROR_OUT_OF_MEMORY);
  Path(
      "cuMemAllocManaged", RoundUp(5 * kMiB), [&] { return api.MemAllocManaged(&p, 5 * kMiB, 1); },
      [&] { return api.MemFree(p); });
  CHECK_RC(api.MemAllocManaged(&p, big, 1), CUDA_ERROR_OUT_OF_MEMORY);
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  CUmemoryPool pool = nullptr;
  CHECK_RC(api.DeviceGetDefaultMemPool(&pool, dev), CUDA_SUCCESS);
  Path(
      "cuMemAllocAsync", kPoolGrowth, [&] { return api.MemAllocAsync(&p, 7 * kMiB, nullptr); },
      [&] {
        CUresult rc = api.MemFreeAsync(p, nullptr);
        api.StreamSynchronize(nullptr);
        return rc;
      },
      pool);
  CHECK_RC(api.MemAllocAsync(&p, big, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  Path(
      "cuMemAllocFromPoolAsync", kPoolGrowth,
      [&] { return api.MemAllocFromPoolAsync(&p, 9 * kMiB, pool, nullptr); },
      [&] {
        CUresult rc = api.MemFreeAsync(p, nullptr);
        api.StreamSynchronize(nullptr);
        return rc;
      },
      pool);
  CHECK_RC(api.MemAllocFromPoolAsync(&p, big, pool, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  Path(
      "cuMemCreate(device)", 4 * kMiB, [&] { return api.MemCreate(&handle, 4 * kMiB, &prop, 0); },
      [&] { return api.MemRelease(handle); });
  CHECK_RC(api.MemCreate(&handle, RoundUp(big), &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemAllocationProp host = prop;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  Path(
      "cuMemCreate(host)", 0, [&] { return api.MemCreate(&handle, 4 * kMiB, &host, 0); },
      [&] { return api.MemRelease(handle); });
  CUarray array = nullptr;
  CUDA_ARRAY_DESCRIPTOR desc = {1024, 1024, CU_AD_FORMAT_FLOAT, 4};  // 16 MiB
  Path(
      "cuArrayCreate", 16 * kMiB, [&] { return api.ArrayCreate(&array, &desc); },
      [&] { return api.ArrayDestroy(array); });
  CUDA_ARRAY_DESCRIPTOR huge = {1u << 20, (size_t)(big >> 20) + 1, CU_AD_FORMAT_UNSIGNED_INT8, 1};
  CHECK_RC(api.ArrayCreate(&array, &huge), CUDA_ERROR_OUT_OF_MEMORY);
  CUDA_ARRAY3D_DESCRIPTOR desc3 = {256, 256, 64, CU_AD_FORMAT_HALF, 2, 0};  // 16 MiB
  Path(
      "cuArray3DCreate", 16 * kMiB, [&] { return api.Array3DCreate(&array, &desc3); },
      [&] { return api.ArrayDestroy(array); });
  CUmipmappedArray mip = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR mdesc = {1024, 1024, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
  // Levels of 4, 1, 0.25 MiB: 5.25 MiB, rounded to 6.
  Path(
      "cuMipmappedArrayCreate", 6 * kMiB, [&] { return api.MipmappedArrayCreate(&mip, &mdesc, 3); },
      [&] { return api.MipmappedArrayDestroy(mip); });
  CUcontext ctx = nullptr;
  Path(
      "cuCtxCreate", any ? kAnyCharge : ctxmem, [&] { return api.CtxCreate(&ctx, 0, dev); },
      [&] {
        CUresult rc = api.CtxDestroy(ctx);
        api.CtxSetCurrent(primary);  // which context is current after a destroy varies
        return rc;
      });
  // A free of a pointer the library never saw reaches the driver untouched.
  uint64_t before = Used();
  CHECK_THAT(api.MemFree(0xdead0000ull) != CUDA_SUCCESS, "freeing an unknown pointer succeeded");
  CHECK_THAT(Used() == before, "freeing an unknown pointer changed the usage");
  return failures ? 1 : 0;
}

// info <limit> <expected total>: what cuMemGetInfo, cuDeviceTotalMem and NVML report.
int Info(uint64_t limit, uint64_t total) {
  Open();
  size_t free_bytes = 0, total_bytes = 0;
  uint64_t base = Used();
  CHECK_RC(api.MemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  CHECK_THAT(total_bytes == total, "cuMemGetInfo total %zu, want %llu", total_bytes,
             (unsigned long long)total);
  CUdeviceptr p = 0;
  CHECK_RC(api.MemAlloc(&p, 100 * kMiB), CUDA_SUCCESS);
  CHECK_RC(api.MemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  CHECK_THAT(free_bytes == total - base - 100 * kMiB, "cuMemGetInfo free %zu, want %llu",
             free_bytes, (unsigned long long)(total - base - 100 * kMiB));
  size_t only = 0;
  CUresult rc = api.MemGetInfo(nullptr, &only);  // the driver decides; the library must not crash
  CHECK_THAT(rc != CUDA_SUCCESS || only == total, "cuMemGetInfo(NULL, &total): total %zu", only);
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  size_t device_total = 0;
  CHECK_RC(api.DeviceTotalMem(&device_total, dev), CUDA_SUCCESS);
  CHECK_THAT(device_total == total, "cuDeviceTotalMem %zu, want %llu", device_total,
             (unsigned long long)total);
  CHECK_THAT(api.DeviceTotalMem(nullptr, dev) != CUDA_SUCCESS, "cuDeviceTotalMem(NULL) succeeded");
  CHECK_THAT(api.NvmlInit() == NVML_SUCCESS, "nvmlInit failed");
  nvmlDevice_t device;
  CHECK_THAT(api.NvmlHandleByIndex(0, &device) == NVML_SUCCESS, "no NVML device 0");
  nvmlMemory_t memory;
  CHECK_THAT(api.NvmlMemoryInfo(device, &memory) == NVML_SUCCESS, "nvmlDeviceGetMemoryInfo failed");
  CHECK_THAT(memory.total == total, "NVML total %llu, want %llu", memory.total,
             (unsigned long long)total);
  CHECK_THAT(memory.used == base + 100 * kMiB, "NVML used %llu, want %llu", memory.used,
             (unsigned long long)(base + 100 * kMiB));
  CHECK_THAT(memory.free == total - memory.used, "NVML free %llu", memory.free);
  nvmlMemory_v2_t memory2;
  std::memset(&memory2, 0, sizeof(memory2));
  memory2.version = nvmlMemory_v2;
  CHECK_THAT(api.NvmlMemoryInfoV2(device, &memory2) == NVML_SUCCESS,
             "nvmlDeviceGetMemoryInfo_v2 failed");
  CHECK_THAT(memory2.total == total, "NVML v2 total %llu", memory2.total);
  CHECK_THAT(memory2.used + memory2.reserved + memory2.free <= total,
             "NVML v2 parts exceed the total");
  CHECK_THAT(api.NvmlMemoryInfo(device, nullptr) != NVML_SUCCESS, "NVML accepted a null pointer");
  CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  (void)limit;
  return failures ? 1 : 0;
}

// hold <bytes>: allocates, prints "held", then waits up to 120 s to be killed.
int Hold(uint64_t bytes) {
  Open();
  CUdeviceptr p = 0;
  CUresult rc = api.MemAlloc(&p, bytes);
  if (rc != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: hold: cuMemAlloc(%llu) returned %d\n", (unsigned long long)bytes,
                 (int)rc);
    return 1;
  }
  std::printf("held\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

// processes <bytes>: holds `bytes`, prints "started", waits (up to 10 s) until the pids file named
// by TESSERA_PIDS_FILE lists this process when one is named, then prints what NVML's process
// queries answer on device 0: "v3 <pid>:<bytes> ...", "v1 ...", "graphics <count>", "needed <n>"
// (a size query's answer), "samples <pid> ..." after a kernel ran.
int Processes(uint64_t bytes) {
  Open();
  CUdeviceptr p = 0;
  if (api.MemAlloc(&p, bytes) != CUDA_SUCCESS) return 1;
  std::printf("started\n");
  std::fflush(stdout);
  if (const char* pids = std::getenv("TESSERA_PIDS_FILE")) {
    std::string mine = std::to_string(getpid()) + " ";
    for (int i = 0; i < 1000; ++i) {
      std::ifstream in(pids);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("\n" + mine) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  nvmlDevice_t dev = nullptr;
  if (api.NvmlInit() != NVML_SUCCESS || api.NvmlHandleByIndex(0, &dev) != NVML_SUCCESS) return 1;
  nvmlProcessInfo_t infos[16];
  unsigned count = 16;
  CHECK_THAT(api.NvmlProcesses(dev, &count, infos) == NVML_SUCCESS, "v3 list");
  std::printf("v3");
  for (unsigned i = 0; i < count; ++i)
    std::printf(" %u:%llu", infos[i].pid, infos[i].usedGpuMemory);
  nvmlProcessInfo_v1_t old[16];
  count = 16;
  CHECK_THAT(api.NvmlProcessesV1(dev, &count, old) == NVML_SUCCESS, "v1 list");
  std::printf("\nv1");
  for (unsigned i = 0; i < count; ++i) std::printf(" %u:%llu", old[i].pid, old[i].usedGpuMemory);
  count = 16;
  CHECK_THAT(api.NvmlGraphicsProcesses(dev, &count, infos) == NVML_SUCCESS, "graphics list");
  std::printf("\ngraphics %u\n", count);
  count = 0;
  nvmlReturn_t sized = api.NvmlProcesses(dev, &count, nullptr);
  std::printf("needed %u%s\n", count, sized == NVML_ERROR_INSUFFICIENT_SIZE ? "" : " (no error)");
  CUmodule module = nullptr;
  CUfunction busy = nullptr;
  CHECK_RC(api.ModuleLoadData(&module, "image"), CUDA_SUCCESS);
  CHECK_RC(api.ModuleGetFunction(&busy, module, "busy_200000us"), CUDA_SUCCESS);
  CHECK_RC(api.LaunchKernel(busy, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(nullptr), CUDA_SUCCESS);
  nvmlProcessUtilizationSample_t samples[64];
  count = 64;
  nvmlReturn_t rc = api.NvmlProcessUtilization(dev, samples, &count, 0);
  std::printf("samples");
  for (unsigned i = 0; rc == NVML_SUCCESS && i < count; ++i) std::printf(" %u", samples[i].pid);
  std::printf("\n");
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}

// alloc <bytes>: exits 0 when the allocation succeeds, 3 when it is refused as out of memory.
int Alloc(uint64_t bytes) {
  Open();
  CUdeviceptr p = 0;
  CUresult rc = api.MemAlloc(&p, bytes);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return 3;
  if (rc != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: alloc: cuMemAlloc returned %d\n", (int)rc);
    return 1;
  }
  return 0;
}

// alloc-when <bytes> <path>: initialises, prints "ready", waits (up to 60 s) for `path` to exist,
// then allocates: exits 0 when the allocation succeeds, 3 when it is refused.
int AllocWhen(uint64_t bytes, const char* path) {
  Open();
  std::printf("ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 60000 && access(path, F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CUdeviceptr p = 0;
  CUresult rc = api.MemAlloc(&p, bytes);
  return rc == CUDA_SUCCESS ? 0 : rc == CUDA_ERROR_OUT_OF_MEMORY ? 3 : 1;
}

// Adds this process to the folder `dir` (a file named by its PID), then waits (up to 60 s) until
// `count` processes are there; false when they never were.
bool MeetAt(const char* dir, uint64_t count) {
  std::string mine = std::string(dir) + "/" + std::to_string(getpid());
  FILE* f = std::fopen(mine.c_str(), "w");
  if (f == nullptr) return false;
  std::fclose(f);
  for (int i = 0; i < 60000; ++i) {
    std::error_code error;
    auto entries = std::filesystem::directory_iterator(dir, error);
    if (!error && uint64_t(std::distance(begin(entries), end(entries))) >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// stress <seconds> <limit> <seed> [<dir> <processes>]: random allocations and frees, then frees
// everything and releases its context; prints counts. With <dir>, its context open, it first
// waits for <processes> processes (itself included) to be there (MeetAt).
int Stress(uint64_t seconds, uint64_t limit, uint64_t seed, const char* dir, uint64_t processes) {
  Open();
  if (dir != nullptr && !MeetAt(dir, processes)) {
    std::fprintf(stderr, "probe: stress: the %llu processes never all opened their contexts\n",
                 (unsigned long long)processes);
    return 1;
  }
  std::mt19937_64 random(seed);
  std::vector<std::pair<CUdeviceptr, uint64_t>> held;
  uint64_t ok = 0, refused = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (!held.empty() && (random() % 2 == 0 || held.size() > 64)) {
      size_t i = random() % held.size();
      CHECK_RC(api.MemFree(held[i].first), CUDA_SUCCESS);
      held[i] = held.back();
      held.pop_back();
      continue;
    }
    uint64_t bytes = 1 + random() % (limit / 4);
    CUdeviceptr p = 0;
    CUresult rc = api.MemAlloc(&p, bytes);
    if (rc == CUDA_SUCCESS) {
      held.emplace_back(p, bytes);
      ++ok;
    } else {
      CHECK_THAT(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc returned %d", (int)rc);
      ++refused;
    }
    CHECK_THAT(Used() <= limit, "usage %llu above the limit", (unsigned long long)Used());
  }
  for (auto& [p, bytes] : held) api.MemFree(p);
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  CHECK_RC(api.PrimaryCtxRelease(dev), CUDA_SUCCESS);  // the last release: the context goes
  std::printf("allocations=%llu refused=%llu\n", (unsigned long long)ok,
              (unsigned long long)refused);
  return failures ? 1 : 0;
}

// fork <limit>: a forked child neither inherits nor releases the parent's charge; a child that
// uses CUDA again gets its own. The parent holds half of the room its context leaves.
int Fork(uint64_t limit) {
  Open();
  uint64_t base = Used();
  const uint64_t half = RoundUp((limit - base) / 2);
  CUdeviceptr p = 0;
  CHECK_RC(api.MemAlloc(&p, half), CUDA_SUCCESS);
  pid_t quiet = fork();
  if (quiet == 0) _exit(0);  // exits without touching CUDA
  int status = 0;
  waitpid(quiet, &status, 0);
  CHECK_THAT(Used() == base + half,
             "a child's exit changed the parent's charge: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + half));
  pid_t child = fork();
  if (child == 0) {
    // The child sees the container's usage and may take what is left, not more.
    size_t free_bytes = 0, total = 0;
    CUresult rc = api.MemGetInfo(&free_bytes, &total);
    if (rc == CUDA_ERROR_NOT_INITIALIZED) _exit(0);  // real drivers refuse CUDA after fork()
    if (rc != CUDA_SUCCESS) _exit(10);
    if (total != limit) _exit(11);
    CUdeviceptr q = 0;
    if (api.MemAlloc(&q, limit - base - half + 1) != CUDA_ERROR_OUT_OF_MEMORY) _exit(12);
    _exit(0);
  }
  waitpid(child, &status, 0);
  CHECK_THAT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "CUDA child exited with %d",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK_THAT(Used() == base + half,
             "the CUDA child's exit changed the parent's charge: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + half));
  CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "usage %llu after the free", (unsigned long long)Used());
  return failures ? 1 : 0;
}

// devices <limit for ordinal 0> <limit for ordinal 1> ...: each device's limit applies to it.
// With `retain_first`, every device's primary context is retained first, in order, and the devices
// are then used last to first: the first allocation is made in the context retained last.
int Devices(int argc, char** argv, int first, bool retain_first) {
  if (api.Init(0) != CUDA_SUCCESS) return 1;
  int count = argc - first;
  for (int ordinal = 0; retain_first && ordinal < count; ++ordinal) {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CHECK_RC(api.DeviceGet(&dev, ordinal), CUDA_SUCCESS);
    CHECK_RC(api.PrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  }
  for (int k = 0; k < count; ++k) {
    int ordinal = retain_first ? count - 1 - k : k;
    uint64_t limit = std::strtoull(argv[first + ordinal], nullptr, 0);
    Open(ordinal);
    CUdevice dev = 0;
    api.DeviceGet(&dev, ordinal);
    size_t total = 0;
    CHECK_RC(api.DeviceTotalMem(&total, dev), CUDA_SUCCESS);
    CHECK_THAT(total == limit, "device %d: total %zu, want %llu", ordinal, total,
               (unsigned long long)limit);
    uint64_t base = Used();
    CUdeviceptr p = 0, q = 0;
    CHECK_RC(api.MemAlloc(&p, limit - base), CUDA_SUCCESS);
    CHECK_RC(api.MemAlloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  }
  return failures ? 1 : 0;
}

// contexts: destroying, resetting or finally releasing a context releases what was allocated in it.
int Contexts() {
  Open();
  uint64_t base = Used();
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  CUdeviceptr p = 0;
  // The last release of the primary context (Open retained it once) destroys it.
  CHECK_RC(api.MemAlloc(&p, 16 * kMiB), CUDA_SUCCESS);
  CHECK_RC(api.PrimaryCtxRelease(dev), CUDA_SUCCESS);
  Open();
  CHECK_THAT(Used() == base, "after the last cuDevicePrimaryCtxRelease: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  CHECK_RC(api.MemAlloc(&p, 64 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 64 * kMiB, "used %llu", (unsigned long long)Used());
  CHECK_RC(api.PrimaryCtxReset(dev), CUDA_SUCCESS);
  Open();  // a new primary context
  CHECK_THAT(Used() == base, "after cuDevicePrimaryCtxReset: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  CUcontext ctx = nullptr;
  CHECK_RC(api.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS);
  // Without it the rest would allocate in the primary context and report that as a release missed
  // (on a real GPU, under a limit too small for a second context, "after cuCtxDestroy: used
  // <base + 32 MiB>, want <base>").
  if (failures) return 1;
  uint64_t with_context = Used();
  CHECK_RC(api.MemAlloc(&p, 32 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == with_context + 32 * kMiB, "used %llu", (unsigned long long)Used());
  CHECK_RC(api.CtxDestroy(ctx), CUDA_SUCCESS);
  api.CtxSetCurrent(primary);
  CHECK_THAT(Used() == base, "after cuCtxDestroy: used %llu, want %llu", (unsigned long long)Used(),
             (unsigned long long)base);
  return failures ? 1 : 0;
}

// juggle <seconds> <bytes>: allocates `bytes` and frees it again, over and over.
int Juggle(uint64_t seconds, uint64_t bytes) {
  Open();
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  uint64_t rounds = 0;
  while (std::chrono::steady_clock::now() < end) {
    CUdeviceptr p = 0;
    CHECK_RC(api.MemAlloc(&p, bytes), CUDA_SUCCESS);
    CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
    if (failures) break;
    ++rounds;
  }
  std::printf("rounds=%llu\n", (unsigned long long)rounds);
  return failures ? 1 : 0;
}

// context-churn <count> <context cost> [host pid]: creates and destroys a context `count` times;
// each must be charged exactly the context's cost. With [host pid], first writes the pids file
// ($TESSERA_PIDS_FILE) the node agent would, naming this process `host pid` on the host.
int ContextChurn(uint64_t count, uint64_t cost, const char* host_pid) {
  if (host_pid != nullptr) {
    const char* path = std::getenv("TESSERA_PIDS_FILE");
    FILE* f = path ? std::fopen(path, "w") : nullptr;
    CHECK_THAT(f != nullptr, "cannot write the pids file named by TESSERA_PIDS_FILE");
    if (f == nullptr) return 1;
    std::fprintf(f, "version=1\n%s %d\n", host_pid, (int)getpid());
    std::fclose(f);
  }
  Open();
  uint64_t base = Used();
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  for (uint64_t i = 0; i < count && failures == 0; ++i) {
    CUcontext ctx = nullptr;
    CHECK_RC(api.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS);
    uint64_t used = Used();
    CHECK_THAT(used == base + cost, "context %llu charged %lld bytes, it costs %llu",
               (unsigned long long)i, (long long)(used - base), (unsigned long long)cost);
    CHECK_RC(api.CtxDestroy(ctx), CUDA_SUCCESS);
    api.CtxSetCurrent(primary);
  }
  std::printf("contexts=%llu\n", (unsigned long long)count);
  return failures ? 1 : 0;
}

// rtld-next: dlsym(RTLD_NEXT, ...) keeps the caller's meaning under the dlsym hook.
int RtldNext() {
  void* next = dlsym(RTLD_NEXT, "getpid");
  void* global = dlsym(RTLD_DEFAULT, "getpid");
  CHECK_THAT(next != nullptr && next == global, "RTLD_NEXT getpid %p, RTLD_DEFAULT %p", next,
             global);
  CHECK_THAT(dlsym(RTLD_NEXT, "no_such_symbol_anywhere") == nullptr, "found a missing symbol");
  // From the program, the next object defining cuInit is the preloaded library (or libcuda).
  void* init = dlsym(RTLD_NEXT, "cuInit");
  CHECK_THAT(init != nullptr, "RTLD_NEXT cuInit not found");
  return failures ? 1 : 0;
}

// vmm <limit>: a cuMemCreate handle stays charged while it is mapped, whatever the order of
// cuMemRelease and cuMemUnmap, and the memory it holds counts against the limit meanwhile.
int Vmm(uint64_t limit) {
  Open();
  const uint64_t base = Used(), size = 8 * kMiB;
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUdeviceptr va = 0, va2 = 0, p = 0;
  CHECK_RC(api.MemAddressReserve(&va, size, 0, 0, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemAddressReserve(&va2, size, 0, 0, 0), CUDA_SUCCESS);
  // create, map, release (llama.cpp's VMM pool, CUDA's samples): the mapping holds the memory.
  CUmemGenericAllocationHandle h = 0;
  CHECK_RC(api.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemMap(va, size, 0, h, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + size, "released while mapped: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + size));
  CHECK_RC(api.MemAlloc(&p, limit - base - size + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.MemUnmap(va, size), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "unmapped after the release: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  // create, map twice, unmap one, release, unmap the other.
  CHECK_RC(api.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemMap(va, size, 0, h, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemMap(va2, size, 0, h, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemUnmap(va, size), CUDA_SUCCESS);
  CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + size, "one mapping left: used %llu", (unsigned long long)Used());
  CHECK_RC(api.MemUnmap(va2, size), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "no mapping left: used %llu", (unsigned long long)Used());
  // create, map, unmap, release: the handle alone holds the memory until its release.
  CHECK_RC(api.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemMap(va, size, 0, h, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemUnmap(va, size), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + size, "unmapped, not released: used %llu",
             (unsigned long long)Used());
  CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "released: used %llu", (unsigned long long)Used());
  // A failed unmap (not a whole mapping) changes nothing.
  CHECK_RC(api.MemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemMap(va, size, 0, h, 0), CUDA_SUCCESS);
  CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);
  CHECK_THAT(api.MemUnmap(va, kGranule) != CUDA_SUCCESS, "unmapped part of a mapping");
  CHECK_THAT(Used() == base + size, "after a failed unmap: used %llu", (unsigned long long)Used());
  CHECK_RC(api.MemUnmap(va, size), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "at the end: used %llu", (unsigned long long)Used());
  CHECK_RC(api.MemAddressFree(va, size), CUDA_SUCCESS);
  CHECK_RC(api.MemAddressFree(va2, size), CUDA_SUCCESS);
  return failures ? 1 : 0;
}

// Runs simgpu's `touch_1000ns` kernel over [p, p + bytes) and waits for it: CUDA_SUCCESS when the
// device can address every byte.
CUresult Touch(CUdeviceptr p, uint64_t bytes) {
  static CUfunction touch = nullptr;
  if (touch == nullptr) {
    CUmodule module = nullptr;
    CHECK_RC(api.ModuleLoadData(&module, "hook_probe spill module"), CUDA_SUCCESS);
    CHECK_RC(api.ModuleGetFunction(&touch, module, "touch_1000ns"), CUDA_SUCCESS);
    if (touch == nullptr) return CUDA_ERROR_NOT_FOUND;
  }
  uint64_t address = p, size = bytes;
  void* params[] = {&address, &size};
  CUresult rc = api.LaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  return rc != CUDA_SUCCESS ? rc : api.CtxSynchronize();
}

// Where the memory of `p` lies (CU_MEMORYTYPE_DEVICE or CU_MEMORYTYPE_HOST).
unsigned MemoryType(CUdeviceptr p) {
  unsigned type = 0;
  CHECK_RC(api.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_SUCCESS);
  return type;
}

// spill <total> <device blocks> <host blocks> <block>: cuMemAlloc of `block` bytes fills the device
// first (that many blocks), then host memory (that many, up to the limit or spill.0), and the next
// one is refused; cuMemGetInfo and NVML report `total` and device and host memory together as
// used; a kernel reaches the host blocks; cuMemAllocPitch spills too; cuMemFree and cuMemFreeAsync
// give both kinds back, and the device's blocks fit on the device again.
int Spill(uint64_t total, uint64_t want_device, uint64_t want_host, uint64_t block) {
  Open();
  const uint64_t base = Used();
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_RC(api.MemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  CHECK_THAT(total_bytes == total, "cuMemGetInfo total %zu, want %llu", total_bytes,
             (unsigned long long)total);
  std::vector<CUdeviceptr> device, host;
  for (int i = 0; i < 512; ++i) {
    CUdeviceptr p = 0;
    CUresult rc = api.MemAlloc(&p, block);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
    CHECK_RC(rc, CUDA_SUCCESS);
    if (rc != CUDA_SUCCESS) break;
    unsigned type = MemoryType(p);
    CHECK_THAT(type == CU_MEMORYTYPE_HOST || host.empty(), "device memory after host memory");
    (type == CU_MEMORYTYPE_HOST ? host : device).push_back(p);
  }
  CHECK_THAT(device.size() == want_device && host.size() == want_host,
             "%zu device and %zu host blocks, want %llu and %llu", device.size(), host.size(),
             (unsigned long long)want_device, (unsigned long long)want_host);
  const uint64_t held = (device.size() + host.size()) * block;
  CHECK_THAT(Used() == base + held, "used %llu, want %llu", (unsigned long long)Used(),
             (unsigned long long)(base + held));
  CHECK_THAT(api.NvmlInit() == NVML_SUCCESS, "nvmlInit failed");
  nvmlDevice_t nvml_device;
  CHECK_THAT(api.NvmlHandleByIndex(0, &nvml_device) == NVML_SUCCESS, "no NVML device 0");
  nvmlMemory_t memory;
  CHECK_THAT(api.NvmlMemoryInfo(nvml_device, &memory) == NVML_SUCCESS, "NVML memory info failed");
  CHECK_THAT(memory.total == total && memory.used == base + held,
             "NVML total %llu used %llu, want %llu and %llu", memory.total, memory.used,
             (unsigned long long)total, (unsigned long long)(base + held));
  for (CUdeviceptr p : host) CHECK_RC(Touch(p, block), CUDA_SUCCESS);
  uint64_t left = base + held;
  if (!host.empty()) {
    // A block's room at the limit again: cuMemAllocPitch spills it, at a pitch of 512 bytes' steps.
    CHECK_RC(api.MemFree(host.back()), CUDA_SUCCESS);
    host.pop_back();
    left -= block;
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CHECK_RC(api.MemAllocPitch(&p, &pitch, 1000, block / 1024, 4), CUDA_SUCCESS);
    CHECK_THAT(pitch == 1024, "pitch %zu, want 1024", pitch);
    CHECK_THAT(MemoryType(p) == CU_MEMORYTYPE_HOST, "the pitched block is not in host memory");
    CHECK_RC(Touch(p, block), CUDA_SUCCESS);
    CHECK_THAT(Used() == base + held, "used %llu after the pitched block",
               (unsigned long long)Used());
    // A stream-ordered free of host memory, after the stream's work.
    CHECK_RC(api.MemFreeAsync(p, nullptr), CUDA_SUCCESS);
  }
  for (CUdeviceptr p : host) {
    CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
    left -= block;
  }
  CHECK_THAT(Used() == left, "used %llu after freeing the host blocks, want %llu",
             (unsigned long long)Used(), (unsigned long long)left);
  for (CUdeviceptr p : device) CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "used %llu after freeing everything, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  for (size_t i = 0; i < device.size(); ++i) {
    CHECK_RC(api.MemAlloc(&device[i], block), CUDA_SUCCESS);
    CHECK_THAT(MemoryType(device[i]) == CU_MEMORYTYPE_DEVICE, "block %zu not on the device again",
               i);
  }
  for (CUdeviceptr p : device) CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  return failures ? 1 : 0;
}

// spill-vmm <device handles> <host handles> <block>: cuMemCreate of device memory fills the device,
// then is created on the host (up to the limit or spill.0); a host handle maps, takes the device's
// access and is reached by a kernel like device memory; releases give everything back.
int SpillVmm(uint64_t want_device, uint64_t want_host, uint64_t block) {
  Open();
  const uint64_t base = Used();
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  std::vector<CUmemGenericAllocationHandle> device, host;
  for (int i = 0; i < 512; ++i) {
    CUmemGenericAllocationHandle h = 0;
    CUresult rc = api.MemCreate(&h, block, &prop, 0);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
    CHECK_RC(rc, CUDA_SUCCESS);
    if (rc != CUDA_SUCCESS) break;
    CUmemAllocationProp got;
    std::memset(&got, 0, sizeof(got));
    CHECK_RC(api.MemGetAllocationPropertiesFromHandle(&got, h), CUDA_SUCCESS);
    bool on_host = got.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                   got.location.type == CU_MEM_LOCATION_TYPE_HOST;
    CHECK_THAT(on_host || got.location.type == CU_MEM_LOCATION_TYPE_DEVICE, "location type %d",
               (int)got.location.type);
    CHECK_THAT(on_host || host.empty(), "device memory after host memory");
    (on_host ? host : device).push_back(h);
  }
  CHECK_THAT(device.size() == want_device && host.size() == want_host,
             "%zu device and %zu host handles, want %llu and %llu", device.size(), host.size(),
             (unsigned long long)want_device, (unsigned long long)want_host);
  const uint64_t held = (device.size() + host.size()) * block;
  CHECK_THAT(Used() == base + held, "used %llu, want %llu", (unsigned long long)Used(),
             (unsigned long long)(base + held));
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<CUdeviceptr> mapped;
  for (CUmemGenericAllocationHandle h : host) {
    CUdeviceptr va = 0;
    CHECK_RC(api.MemAddressReserve(&va, block, 0, 0, 0), CUDA_SUCCESS);
    CHECK_RC(api.MemMap(va, block, 0, h, 0), CUDA_SUCCESS);
    CHECK_RC(api.MemSetAccess(va, block, &access, 1), CUDA_SUCCESS);
    CHECK_RC(Touch(va, block), CUDA_SUCCESS);
    CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);  // the mapping holds it
    mapped.push_back(va);
  }
  CHECK_THAT(Used() == base + held, "used %llu with the host handles mapped and released",
             (unsigned long long)Used());
  for (CUdeviceptr va : mapped) {
    CHECK_RC(api.MemUnmap(va, block), CUDA_SUCCESS);
    CHECK_RC(api.MemAddressFree(va, block), CUDA_SUCCESS);
  }
  for (CUmemGenericAllocationHandle h : device) CHECK_RC(api.MemRelease(h), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "used %llu after releasing everything, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  return failures ? 1 : 0;
}

// pools <limit>: stream-ordered allocations charge what their pool holds: small ones share its
// chunks (no false out-of-memory), memory the pool keeps under its release threshold counts until
// trimmed, and a host pool charges nothing.
int Pools(uint64_t limit) {
  Open();
  const uint64_t base = Used();
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  CUmemoryPool pool = nullptr;
  CHECK_RC(api.DeviceGetDefaultMemPool(&pool, dev), CUDA_SUCCESS);
  std::vector<CUdeviceptr> small(1000);
  for (auto& p : small) CHECK_RC(api.MemAllocAsync(&p, 1024, nullptr), CUDA_SUCCESS);
  // Charged what the pool reserved, which the small allocations share: one chunk.
  CHECK_THAT(Used() - base == PoolReserve(pool) && PoolReserve(pool) <= 32 * kMiB,
             "1000 allocations of 1 KiB: %llu bytes charged, the pool holds %llu (at most 32 MiB)",
             (unsigned long long)(Used() - base), (unsigned long long)PoolReserve(pool));
  for (auto p : small) CHECK_RC(api.MemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(nullptr), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "after the frees and a synchronisation: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)base);
  uint64_t threshold = 64 * kMiB;
  CHECK_RC(api.MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
           CUDA_SUCCESS);
  CUdeviceptr p = 0, q = 0;
  CHECK_RC(api.MemAllocAsync(&p, 32 * kMiB, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.MemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(nullptr), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 32 * kMiB, "the pool keeps 32 MiB: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + 32 * kMiB));
  CHECK_RC(api.MemAlloc(&q, limit - base - 32 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.MemAllocAsync(&p, 32 * kMiB, nullptr), CUDA_SUCCESS);  // from what it keeps
  CHECK_THAT(Used() == base + 32 * kMiB, "reused: used %llu", (unsigned long long)Used());
  CHECK_RC(api.MemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(nullptr), CUDA_SUCCESS);
  CHECK_RC(api.MemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "trimmed: used %llu", (unsigned long long)Used());
  threshold = 0;
  CHECK_RC(api.MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
           CUDA_SUCCESS);
  // Over the limit, a pool's growth is refused.
  CHECK_RC(api.MemAllocAsync(&p, limit - base + 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool host = nullptr;
  CHECK_RC(api.MemPoolCreate(&host, &props), CUDA_SUCCESS);
  CHECK_RC(api.MemAllocFromPoolAsync(&p, 2 * limit, host, nullptr), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "a host pool: used %llu", (unsigned long long)Used());
  CHECK_RC(api.MemFreeAsync(p, nullptr), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(nullptr), CUDA_SUCCESS);
  CHECK_RC(api.MemPoolDestroy(host), CUDA_SUCCESS);
  return failures ? 1 : 0;
}

// pool-refused-beside-capture <limit>: a stream-ordered allocation over the limit whose pool grows
// more than the library foresaw (its chunk is fragmented) is undone by the library, which waits
// for the free, while another thread captures in global mode: the capture must complete (the
// driver forbids that thread's synchronisation during such a capture and invalidates it).
int PoolRefusedBesideCapture(uint64_t limit) {
  Open();
  CUstream stream = nullptr, capturing = nullptr;
  CHECK_RC(api.StreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */), CUDA_SUCCESS);
  CHECK_RC(api.StreamCreate(&capturing, 1), CUDA_SUCCESS);
  CUdeviceptr kept = 0, freed = 0, filler = 0, refused = 0;
  CHECK_RC(api.MemAllocAsync(&kept, kMiB, stream), CUDA_SUCCESS);  // a 2 MiB chunk
  CHECK_RC(api.MemAllocAsync(&freed, kMiB / 2, stream), CUDA_SUCCESS);
  CHECK_RC(api.MemFreeAsync(freed, stream), CUDA_SUCCESS);  // 1 MiB unused, 512 KiB usable
  CHECK_RC(api.MemAlloc(&filler, (limit - Used()) / kGranule * kGranule), CUDA_SUCCESS);
  const uint64_t before = Used();
  CHECK_RC(api.StreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  std::thread([&] {
    CHECK_RC(api.CtxSetCurrent(primary), CUDA_SUCCESS);
    // Foreseen growth 0 (1 MiB unused); the pool takes a new chunk: over the limit, undone.
    CHECK_RC(api.MemAllocAsync(&refused, kMiB, stream), CUDA_ERROR_OUT_OF_MEMORY);
  }).join();
  CUgraph graph = nullptr;
  CHECK_RC(api.StreamEndCapture(capturing, &graph), CUDA_SUCCESS);
  if (graph != nullptr) CHECK_RC(api.GraphDestroy(graph), CUDA_SUCCESS);
  CHECK_THAT(Used() == before, "after the refusal: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)before);
  CHECK_RC(api.MemFree(filler), CUDA_SUCCESS);
  CHECK_RC(api.MemFreeAsync(kept, stream), CUDA_SUCCESS);
  CHECK_RC(api.StreamSynchronize(stream), CUDA_SUCCESS);
  return failures ? 1 : 0;
}

// pool-device-hold <bytes>: allocates from device 1's default pool while device 0's context is
// current, prints "held" and waits up to 120 s to be killed.
int PoolDeviceHold(uint64_t bytes) {
  Open(1);
  Open(0);
  CUmemoryPool pool = nullptr;
  CHECK_RC(api.DeviceGetDefaultMemPool(&pool, 1), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  CHECK_RC(api.MemAllocFromPoolAsync(&p, bytes, pool, nullptr), CUDA_SUCCESS);
  if (failures) return 1;
  std::printf("held\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

// heap <limit>: a device heap larger than the one a context starts with (8 MiB) is charged, a
// smaller one gives it back, and destroying the context releases it.
int Heap(uint64_t limit) {
  Open();
  const uint64_t base = Used();
  CHECK_RC(api.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 56 * kMiB, "a 64 MiB heap: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + 56 * kMiB));
  CHECK_RC(api.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 2 * limit), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 8 * kMiB, "a 16 MiB heap: used %llu", (unsigned long long)Used());
  CUdevice dev = 0;
  api.DeviceGet(&dev, 0);
  CUcontext ctx = nullptr;
  CHECK_RC(api.CtxCreate(&ctx, 0, dev), CUDA_SUCCESS);
  const uint64_t with_context = Used();
  CHECK_RC(api.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 40 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == with_context + 32 * kMiB, "a second context's 40 MiB heap: used %llu",
             (unsigned long long)Used());
  CHECK_RC(api.CtxDestroy(ctx), CUDA_SUCCESS);
  CHECK_RC(api.CtxSetCurrent(primary), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 8 * kMiB, "the context destroyed: used %llu",
             (unsigned long long)Used());
  CHECK_RC(api.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * kMiB), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "back to 8 MiB: used %llu", (unsigned long long)Used());
  return failures ? 1 : 0;
}

// graphs <limit>: a graph's allocation nodes are charged when a launch backs them, stay charged
// while the device keeps the memory for graphs (after the free too) until cuDeviceGraphMemTrim,
// and a launch whose allocations do not fit is refused; captured allocations likewise.
int Graphs(uint64_t limit) {
  Open();
  const uint64_t base = Used();
  CUstream stream = nullptr;
  CHECK_RC(api.StreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */), CUDA_SUCCESS);
  auto with_allocation = [&](uint64_t bytes, CUgraph* graph, CUgraphExec* exec) {
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    std::memset(&params, 0, sizeof(params));
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.bytesize = bytes;
    CUgraphNode node = nullptr;
    CHECK_RC(api.GraphCreate(graph, 0), CUDA_SUCCESS);
    CHECK_RC(api.GraphAddMemAllocNode(&node, *graph, nullptr, 0, &params), CUDA_SUCCESS);
    CHECK_RC(api.GraphInstantiate(exec, *graph, 0), CUDA_SUCCESS);
    return params.dptr;
  };
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUdeviceptr p = with_allocation(64 * kMiB, &graph, &exec), q = 0;
  CHECK_THAT(Used() == base, "instantiated: used %llu", (unsigned long long)Used());
  CHECK_RC(api.GraphLaunch(exec, stream), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 64 * kMiB, "launched: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + 64 * kMiB));
  CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 64 * kMiB, "freed, kept for graphs: used %llu",
             (unsigned long long)Used());
  CHECK_RC(api.MemAlloc(&q, limit - base - 64 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(api.DeviceGraphMemTrim(0), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "trimmed: used %llu", (unsigned long long)Used());
  CHECK_RC(api.GraphExecDestroy(exec), CUDA_SUCCESS);
  CHECK_RC(api.GraphDestroy(graph), CUDA_SUCCESS);
  with_allocation(limit - base + kGranule, &graph, &exec);
  CHECK_RC(api.GraphLaunch(exec, stream), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_THAT(Used() == base, "a refused launch: used %llu", (unsigned long long)Used());
  CHECK_RC(api.GraphExecDestroy(exec), CUDA_SUCCESS);
  CHECK_RC(api.GraphDestroy(graph), CUDA_SUCCESS);
  CHECK_RC(api.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_RC(api.MemAllocAsync(&p, 32 * kMiB, stream), CUDA_SUCCESS);
  CHECK_RC(api.MemFreeAsync(p, stream), CUDA_SUCCESS);
  CHECK_RC(api.StreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "captured: used %llu", (unsigned long long)Used());
  CHECK_RC(api.GraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  CHECK_RC(api.GraphLaunch(exec, stream), CUDA_SUCCESS);
  CHECK_THAT(Used() == base + 32 * kMiB, "captured and launched: used %llu, want %llu",
             (unsigned long long)Used(), (unsigned long long)(base + 32 * kMiB));
  CHECK_RC(api.DeviceGraphMemTrim(0), CUDA_SUCCESS);
  CHECK_THAT(Used() == base, "trimmed again: used %llu", (unsigned long long)Used());
  CHECK_RC(api.GraphExecDestroy(exec), CUDA_SUCCESS);
  CHECK_RC(api.GraphDestroy(graph), CUDA_SUCCESS);
  return failures ? 1 : 0;
}

// Waits (up to 60 s) for `path` to exist.
void WaitForFile(const char* path) {
  for (int i = 0; i < 60000 && access(path, F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// free-later <bytes> <go> <again>: allocates, prints "held"; once `go` exists frees it, prints
// "freed"; once `again` exists allocates one granule, prints "done" and waits up to 120 s.
int FreeLater(uint64_t bytes, const char* go, const char* again) {
  Open();
  CUdeviceptr p = 0;
  CHECK_RC(api.MemAlloc(&p, bytes), CUDA_SUCCESS);
  if (failures) return 1;
  std::printf("held\n");
  std::fflush(stdout);
  WaitForFile(go);
  CHECK_RC(api.MemFree(p), CUDA_SUCCESS);
  std::printf("freed\n");
  std::fflush(stdout);
  WaitForFile(again);
  CHECK_RC(api.MemAlloc(&p, kGranule), CUDA_SUCCESS);
  if (failures) return 1;
  std::printf("done\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

// huge-hold: allocates 2 MiB, then SIZE_MAX (which must fail), prints "held" and waits up to
// 120 s to be killed.
int HugeHold() {
  Open();
  CUdeviceptr p = 0, q = 0;
  CHECK_RC(api.MemAlloc(&p, kGranule), CUDA_SUCCESS);
  CHECK_THAT(api.MemAlloc(&q, SIZE_MAX) != CUDA_SUCCESS, "cuMemAlloc(SIZE_MAX) succeeded");
  if (failures) return 1;
  std::printf("held\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

// retain-race <threads> <context cost>: that many threads retain the primary context at once;
// it must be charged once, and nothing must stay charged once it is released by all.
int RetainRace(uint64_t threads, uint64_t cost) {
  if (api.Init(0) != CUDA_SUCCESS) return 1;
  CUdevice dev = 0;
  CHECK_RC(api.DeviceGet(&dev, 0), CUDA_SUCCESS);
  std::atomic<uint64_t> waiting{threads};
  std::vector<std::thread> pool;
  std::vector<CUcontext> got(threads);
  for (uint64_t i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      waiting.fetch_sub(1);
      while (waiting.load() != 0) {
      }
      CHECK_RC(api.PrimaryCtxRetain(&got[i], dev), CUDA_SUCCESS);
    });
  }
  for (auto& t : pool) t.join();
  CHECK_RC(api.CtxSetCurrent(got[0]), CUDA_SUCCESS);
  CHECK_THAT(Used() == cost,
             "%llu threads retained the primary context: %llu bytes charged, want "
             "%llu",
             (unsigned long long)threads, (unsigned long long)Used(), (unsigned long long)cost);
  for (uint64_t i = 0; i < threads; ++i) CHECK_RC(api.PrimaryCtxRelease(dev), CUDA_SUCCESS);
  CUcontext again = nullptr;
  CHECK_RC(api.PrimaryCtxRetain(&again, dev), CUDA_SUCCESS);
  CHECK_RC(api.CtxSetCurrent(again), CUDA_SUCCESS);
  CHECK_THAT(Used() == cost, "after the releases and one retain: %llu bytes charged, want %llu",
             (unsigned long long)Used(), (unsigned long long)cost);
  return failures ? 1 : 0;
}

// NVML's memory of this process on `device`: true and *bytes when NVML lists the process with it.
bool OwnMemory(nvmlDevice_t device, uint64_t* bytes) {
  std::vector<nvmlProcessInfo_t> infos(1024);
  unsigned int count = static_cast<unsigned int>(infos.size());
  if (api.NvmlProcesses(device, &count, infos.data()) != NVML_SUCCESS) return false;
  for (unsigned int i = 0; i < count; ++i) {
    // NVML_VALUE_NOT_AVAILABLE (all ones) without the right to see it.
    if (infos[i].pid == static_cast<unsigned int>(getpid()) && infos[i].usedGpuMemory != ~0ull) {
      *bytes = infos[i].usedGpuMemory;
      return true;
    }
  }
  return false;
}

// context-cost: what device 0's primary context costs in device memory, measured as the library
// measures it (context_cost.h): NVML's memory of this process before and after the context is
// created or, where NVML does not list the process (another PID namespace), the fall of the
// device's free memory. Run without the library. Prints "context_bytes=N by=nvml|free".
int ContextCost() {
  CUdevice dev = 0;
  CUuuid raw;
  if (api.Init(0) != CUDA_SUCCESS || api.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
      api.DeviceGetUuid(&raw, dev) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: context-cost: no CUDA device 0\n");
    return 1;
  }
  const unsigned char* b = reinterpret_cast<const unsigned char*>(raw.bytes);
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  nvmlDevice_t device;
  if (api.NvmlInit() != NVML_SUCCESS || api.NvmlHandleByUuid(uuid, &device) != NVML_SUCCESS) {
    std::fprintf(stderr, "probe: context-cost: NVML has no device %s\n", uuid);
    return 1;
  }
  uint64_t own_before = 0, own_after = 0;
  if (!OwnMemory(device, &own_before)) own_before = 0;  // not listed: no context yet
  nvmlMemory_t before, after;
  CHECK_THAT(api.NvmlMemoryInfo(device, &before) == NVML_SUCCESS, "nvmlDeviceGetMemoryInfo failed");
  Open();
  CHECK_THAT(api.NvmlMemoryInfo(device, &after) == NVML_SUCCESS, "nvmlDeviceGetMemoryInfo failed");
  if (failures) return 1;
  const bool listed = OwnMemory(device, &own_after);
  const uint64_t cost = listed ? own_after - own_before : before.free - after.free;
  CHECK_THAT(cost < before.total, "a context costs %llu bytes", (unsigned long long)cost);
  std::printf("context_bytes=%llu by=%s\n", (unsigned long long)cost, listed ? "nvml" : "free");
  return failures ? 1 : 0;
}

// driven <dir>: a process the test steers while it runs (issue 36: limits that change under a
// running process). Reads its N-th command from <dir>/cmd.<N> (waiting up to 60 s for the file),
// runs it and prints "<N> <answer>":
//   alloc <bytes>          "ok", or "oom" when refused as out of memory (kept until freed)
//   alloc-within <bytes> <ms>
//                          retries every 5 ms: "ok <ms it took>", or "oom" after <ms>
//   free                   frees the newest allocation kept: "freed"
//   info                   "free=<f> total=<t> nvml=<NVML's total>" for device 0
//   total-within <bytes> <ms>
//                          polls cuMemGetInfo every 5 ms until its total is <bytes>: "ok <ms>", or
//                          "total=<t>" after <ms>
//   exit                   exits 0
int Driven(const char* dir) {
  Open();
  nvmlDevice_t device = nullptr;
  if (api.NvmlInit() != NVML_SUCCESS || api.NvmlHandleByIndex(0, &device) != NVML_SUCCESS) return 1;
  std::vector<CUdeviceptr> held;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point start) {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  };
  auto total = [] {
    size_t free_bytes = 0, total_bytes = 0;
    return api.MemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS ? total_bytes : size_t{0};
  };
  for (int n = 0;; ++n) {
    const std::string path = std::string(dir) + "/cmd." + std::to_string(n);
    WaitForFile(path.c_str());
    std::ifstream in(path);
    std::string verb;
    uint64_t bytes = 0, within = 0;
    in >> verb >> bytes >> within;
    std::string answer;
    if (verb == "alloc" || verb == "alloc-within") {
      const auto start = Clock::now();
      CUdeviceptr p = 0;
      CUresult rc;
      while ((rc = api.MemAlloc(&p, bytes)) == CUDA_ERROR_OUT_OF_MEMORY && verb == "alloc-within" &&
             uint64_t(ms_since(start)) < within) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (rc == CUDA_SUCCESS) held.push_back(p);
      answer = rc == CUDA_SUCCESS               ? "ok " + std::to_string(ms_since(start))
               : rc == CUDA_ERROR_OUT_OF_MEMORY ? "oom"
                                                : "rc=" + std::to_string(rc);
    } else if (verb == "free" && !held.empty()) {
      CHECK_RC(api.MemFree(held.back()), CUDA_SUCCESS);
      held.pop_back();
      answer = "freed";
    } else if (verb == "info") {
      size_t free_bytes = 0, total_bytes = 0;
      nvmlMemory_t memory{};
      CHECK_RC(api.MemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
      CHECK_THAT(api.NvmlMemoryInfo(device, &memory) == NVML_SUCCESS, "nvmlDeviceGetMemoryInfo");
      answer = "free=" + std::to_string(free_bytes) + " total=" + std::to_string(total_bytes) +
               " nvml=" + std::to_string(memory.total);
    } else if (verb == "total-within") {
      const auto start = Clock::now();
      size_t now;
      while ((now = total()) != bytes && uint64_t(ms_since(start)) < within) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      answer =
          now == bytes ? "ok " + std::to_string(ms_since(start)) : "total=" + std::to_string(now);
    } else if (verb == "exit") {
      return failures ? 1 : 0;
    } else {
      std::fprintf(stderr, "probe: driven: unknown command \"%s\"\n", verb.c_str());
      return 2;
    }
    std::printf("%d %s\n", n, answer.c_str());
    std::fflush(stdout);
  }
}

// init: exits with cuInit's result.
int InitOnly() {
  return static_cast<int>(api.Init(0));
}

}  // namespace
}  // namespace tessera::hooktest

int main(int argc, char** argv) {
  using namespace tessera::hooktest;
  if (argc < 3) {
    std::fprintf(stderr, "usage: hook_probe direct|runtime|runtime-ptds <command> [args]\n");
    return 2;
  }
  std::string error = LoadApi(argv[1], &api);
  if (!error.empty()) {
    std::fprintf(stderr, "probe: %s\n", error.c_str());
    return 1;
  }
  std::string command = argv[2];
  if (command == "boundary") return Boundary(Arg(argv, argc, 3));
  if (command == "paths") {
    if (argc < 5) return 2;
    return Paths(Arg(argv, argc, 3), argv[4]);
  }
  if (command == "info") return Info(Arg(argv, argc, 3), Arg(argv, argc, 4));
  if (command == "hold") return Hold(Arg(argv, argc, 3));
  if (command == "alloc") return Alloc(Arg(argv, argc, 3));
  if (command == "processes") return Processes(Arg(argv, argc, 3));
  if (command == "alloc-when") {
    if (argc < 5) return 2;
    return AllocWhen(Arg(argv, argc, 3), argv[4]);
  }
  if (command == "stress") {
    return Stress(Arg(argv, argc, 3), Arg(argv, argc, 4), Arg(argv, argc, 5),
                  argc > 6 ? argv[6] : nullptr, argc > 6 ? Arg(argv, argc, 7) : 0);
  }
  if (command == "fork") return Fork(Arg(argv, argc, 3));
  if (command == "devices") return Devices(argc, argv, 3, false);
  if (command == "devices-retained-first") return Devices(argc, argv, 3, true);
  if (command == "init") return InitOnly();
  if (command == "driven") {
    if (argc < 4) return 2;
    return Driven(argv[3]);
  }
  if (command == "context-cost") return ContextCost();
  if (command == "huge-hold") return HugeHold();
  if (command == "vmm") return Vmm(Arg(argv, argc, 3));
  if (command == "spill") {
    return Spill(Arg(argv, argc, 3), Arg(argv, argc, 4), Arg(argv, argc, 5), Arg(argv, argc, 6));
  }
  if (command == "spill-vmm")
    return SpillVmm(Arg(argv, argc, 3), Arg(argv, argc, 4), Arg(argv, argc, 5));
  if (command == "pools") return Pools(Arg(argv, argc, 3));
  if (command == "heap") return Heap(Arg(argv, argc, 3));
  if (command == "graphs") return Graphs(Arg(argv, argc, 3));
  if (command == "pool-device-hold") return PoolDeviceHold(Arg(argv, argc, 3));
  if (command == "pool-refused-beside-capture") return PoolRefusedBesideCapture(Arg(argv, argc, 3));
  if (command == "free-later") {
    if (argc < 6) return 2;
    return FreeLater(Arg(argv, argc, 3), argv[4], argv[5]);
  }
  if (command == "retain-race") return RetainRace(Arg(argv, argc, 3), Arg(argv, argc, 4));
  if (command == "rtld-next") return RtldNext();
  if (command == "contexts") return Contexts();
  if (command == "juggle") return Juggle(Arg(argv, argc, 3), Arg(argv, argc, 4));
  if (command == "context-churn")
    return ContextChurn(Arg(argv, argc, 3), Arg(argv, argc, 4), argc > 5 ? argv[5] : nullptr);
  std::fprintf(stderr, "probe: unknown command %s\n", command.c_str());
  return 2;
}
