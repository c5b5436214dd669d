// A job over virtual device memory: fill GPU 0, read every byte with a kernel, free. Under
// Tessera's library with `spill.0` set (docs/in-container-library.md, "Memory beyond the device
// (spill)") the chunks the device cannot hold come from host memory the device maps; this program
// finds out which did as any program can, from the driver: cuPointerGetAttribute's memory type of
// a cuMemAlloc pointer (CU_MEMORYTYPE_HOST), the location of a cuMemCreate handle's properties (a
// host one). simgpu's touch kernel fails with CUDA_ERROR_ILLEGAL_ADDRESS on any byte the device
// cannot address, and reads host memory `hostslow` times slower (docs/simgpu.md), which the
// per-MiB times it prints show.
//
// Findings:
//   mem.total_mib                 cuMemGetInfo's total (under the library: the container's limit)
//   fill.requested_mib            MIB
//   fill.allocated_mib            what the allocations got, device and host together
//   fill.device_mib / spilled_mib of that, in device memory / in host memory
//   fill.error                    CUresult of the first refused allocation, 0 when none was
//   fill.touched                  ok when the kernel read every chunk
//   fill.touch_device_us_per_mib / fill.touch_spilled_us_per_mib   its time per MiB of each kind
//   mem.total_after_mib           cuMemGetInfo's total once FILE appeared (--after)
//   fill.holding                  1 while it waits for FILE (--wait)
//   fill.touched_again            ok when the second pass read every chunk (--wait)
//   fill.released                 1 when cuMemGetInfo's used is back to what it was before
//   fill.finished                 1 at the end
#include "workload_spill.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "abi/cuda_driver.h"

namespace tessera::workload {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMaxMiB = 1ull << 20;  // 1 TiB
constexpr uint64_t kBigStep = 64 * kMiB;
constexpr uint64_t kSmallStep = 2 * kMiB;
// 10 us per MiB of device memory, 75 times that of host memory at simgpu's default: seconds for
// gigabytes of spilled memory, long enough against a launch's cost to tell the two apart.
constexpr const char* kTouchKernel = "touch_10000ns";
constexpr int kWaitSeconds = 300;

bool Check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: %s failed: CUresult %d\n", what, static_cast<int>(rc));
  return false;
}

uint64_t NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

struct Chunk {
  bool vmm = false;  // cuMemCreate handle mapped at `va`, else a cuMemAlloc pointer
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  uint64_t size = 0;
  bool spilled = false;  // its memory is on the host
};

CUmemAllocationProp DeviceProp() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

// What one allocation came to: made, refused by the allocation call (`rc`, a finding), or failed
// after it was made (mapping, queries: the job cannot go on).
enum class Outcome { kMade, kRefused, kBroken };

Outcome Allocate(uint64_t size, bool vmm, Chunk* c, CUresult* rc) {
  c->vmm = vmm;
  c->size = size;
  if (!vmm) {
    *rc = cuMemAlloc(&c->va, size);
    if (*rc != CUDA_SUCCESS) return Outcome::kRefused;
    CUmemorytype type = CU_MEMORYTYPE_DEVICE;
    if (!Check(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, c->va),
               "cuPointerGetAttribute(MEMORY_TYPE)")) {
      return Outcome::kBroken;
    }
    c->spilled = type == CU_MEMORYTYPE_HOST;
    return Outcome::kMade;
  }
  CUmemAllocationProp prop = DeviceProp();
  *rc = cuMemCreate(&c->handle, size, &prop, 0);
  if (*rc != CUDA_SUCCESS) return Outcome::kRefused;
  CUmemAllocationProp got{};
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (!Check(cuMemGetAllocationPropertiesFromHandle(&got, c->handle),
             "cuMemGetAllocationPropertiesFromHandle") ||
      !Check(cuMemAddressReserve(&c->va, size, 0, 0, 0), "cuMemAddressReserve") ||
      !Check(cuMemMap(c->va, size, 0, c->handle, 0), "cuMemMap") ||
      !Check(cuMemSetAccess(c->va, size, &access, 1), "cuMemSetAccess")) {
    return Outcome::kBroken;
  }
  c->spilled = got.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  return Outcome::kMade;
}

bool Free(const Chunk& c) {
  if (!c.vmm) return Check(cuMemFree(c.va), "cuMemFree");
  return Check(cuMemUnmap(c.va, c.size), "cuMemUnmap") &&
         Check(cuMemAddressFree(c.va, c.size), "cuMemAddressFree") &&
         Check(cuMemRelease(c.handle), "cuMemRelease");
}

// One pass of the kernel over every chunk, each waited for; adds each kind's time to `us`
// ([0] device, [1] spilled).
bool TouchAll(CUfunction touch, const std::vector<Chunk>& chunks, uint64_t us[2]) {
  for (const Chunk& c : chunks) {
    uint64_t address = c.va, size = c.size;
    void* params[] = {&address, &size};
    uint64_t start = NowUs();
    CUresult rc = cuLaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
    if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
    if (rc != CUDA_SUCCESS) {
      std::fprintf(stderr,
                   "workload: the kernel reading %llu MiB of %s memory at 0x%llx failed: "
                   "CUresult %d\n",
                   static_cast<unsigned long long>(c.size / kMiB), c.spilled ? "host" : "device",
                   static_cast<unsigned long long>(c.va), static_cast<int>(rc));
      return false;
    }
    us[c.spilled ? 1 : 0] += NowUs() - start;
  }
  return true;
}

bool WaitFor(const std::string& path) {
  for (int i = 0; i < kWaitSeconds * 10; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "workload: %s did not appear in %d s\n", path.c_str(), kWaitSeconds);
  return false;
}

bool UsedBytes(uint64_t* used, uint64_t* total) {
  size_t free = 0, all = 0;
  if (!Check(cuMemGetInfo(&free, &all), "cuMemGetInfo")) return false;
  *used = all - free;
  *total = all;
  return true;
}

int Usage(const char* why) {
  std::fprintf(
      stderr,
      "workload: --fill: %s; expected --fill MIB [--create] [--wait FILE] [--after FILE], MIB "
      "from 1 to "
      "%llu\n",
      why, static_cast<unsigned long long>(kMaxMiB));
  return 2;
}

}  // namespace

int Fill(int argc, char** args) {
  if (argc < 1) return Usage("no size given");
  char* end = nullptr;
  uint64_t mib = std::strtoull(args[0], &end, 10);
  if (end == args[0] || *end != '\0' || mib < 1 || mib > kMaxMiB) {
    return Usage(
        (std::string("size '") + args[0] + "' is not a whole number of MiB in range").c_str());
  }
  bool create = false;
  std::string wait_file, after_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(args[i], "--create") == 0) {
      create = true;
    } else if (std::strcmp(args[i], "--wait") == 0 && i + 1 < argc) {
      wait_file = args[++i];
    } else if (std::strcmp(args[i], "--after") == 0 && i + 1 < argc) {
      after_file = args[++i];
    } else {
      return Usage((std::string("unknown or incomplete argument '") + args[i] + "'").c_str());
    }
  }

  uint64_t used_before = 0, total = 0;
  CUmodule module;
  CUfunction touch;
  if (!Check(cuModuleLoadData(&module, "tessera demo workload"), "cuModuleLoadData") ||
      !Check(cuModuleGetFunction(&touch, module, kTouchKernel), "cuModuleGetFunction") ||
      !UsedBytes(&used_before, &total)) {
    return 1;
  }
  std::printf("mem.total_mib=%llu\n", static_cast<unsigned long long>(total / kMiB));
  // --after: a process started before its container's limits change (a resize, docs/resize.md)
  // allocates only once FILE appears, under the limits the library applies by then.
  if (!after_file.empty()) {
    std::fflush(stdout);
    if (!WaitFor(after_file) || !UsedBytes(&used_before, &total)) return 1;
    std::printf("mem.total_after_mib=%llu\n", static_cast<unsigned long long>(total / kMiB));
  }

  // 64 MiB chunks (the tail smaller), then 2 MiB ones once one is refused. A size that is no
  // multiple of cuMemCreate's 2 MiB granule is always a cuMemAlloc chunk.
  std::vector<Chunk> chunks;
  const uint64_t target = mib * kMiB;
  uint64_t allocated = 0, spilled = 0, step = kBigStep;
  CUresult first_refusal = CUDA_SUCCESS;
  bool broken = false;
  while (allocated < target) {
    uint64_t size = std::min(step, target - allocated);
    bool vmm = create && chunks.size() % 2 == 1 && size % kSmallStep == 0;
    Chunk c;
    CUresult rc = CUDA_SUCCESS;
    Outcome outcome = Allocate(size, vmm, &c, &rc);
    if (outcome == Outcome::kMade) {
      chunks.push_back(c);
      allocated += size;
      if (c.spilled) spilled += size;
      continue;
    }
    if (outcome == Outcome::kBroken) {  // the job ends; the process's exit frees what it made
      broken = true;
      break;
    }
    if (first_refusal == CUDA_SUCCESS) first_refusal = rc;
    if (size <= kSmallStep) break;
    step = kSmallStep;
  }
  std::printf("filled %llu of %llu MiB (%llu MiB in host memory); ",
              static_cast<unsigned long long>(allocated / kMiB),
              static_cast<unsigned long long>(mib),
              static_cast<unsigned long long>(spilled / kMiB));
  if (first_refusal == CUDA_SUCCESS) {
    std::printf("no allocation was refused\n");
  } else {
    std::printf("the first refused allocation got CUresult %d\n", static_cast<int>(first_refusal));
  }
  std::printf(
      "fill.requested_mib=%llu\nfill.allocated_mib=%llu\nfill.device_mib=%llu\n"
      "fill.spilled_mib=%llu\nfill.error=%d\n",
      static_cast<unsigned long long>(mib), static_cast<unsigned long long>(allocated / kMiB),
      static_cast<unsigned long long>((allocated - spilled) / kMiB),
      static_cast<unsigned long long>(spilled / kMiB), static_cast<int>(first_refusal));
  std::fflush(stdout);

  bool ok = !broken && (first_refusal == CUDA_SUCCESS || first_refusal == CUDA_ERROR_OUT_OF_MEMORY);
  uint64_t us[2] = {0, 0};
  if (ok) {
    ok = TouchAll(touch, chunks, us);
    std::printf("fill.touched=%s\n", ok ? "ok" : "failed");
  }
  if (ok && allocated > spilled) {
    std::printf("fill.touch_device_us_per_mib=%.1f\n",
                static_cast<double>(us[0]) / static_cast<double>((allocated - spilled) / kMiB));
  }
  if (ok && spilled > 0) {
    std::printf("fill.touch_spilled_us_per_mib=%.1f\n",
                static_cast<double>(us[1]) / static_cast<double>(spilled / kMiB));
  }
  if (ok && !wait_file.empty()) {
    std::printf("fill.holding=1\n");
    std::fflush(stdout);
    ok = WaitFor(wait_file) && TouchAll(touch, chunks, us);
    std::printf("fill.touched_again=%s\n", ok ? "ok" : "failed");
  }
  for (const Chunk& c : chunks) {
    if (!Free(c)) ok = false;
  }
  uint64_t used_after = 0;
  if (ok && UsedBytes(&used_after, &total)) {
    std::printf("fill.released=%d\n", used_after == used_before ? 1 : 0);
    ok = used_after == used_before;
  } else {
    ok = false;
  }
  std::printf("fill.finished=%d\n", ok ? 1 : 0);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace tessera::workload
