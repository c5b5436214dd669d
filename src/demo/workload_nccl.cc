// NCCL's single-node set-up over cuMem, as its sources make it for two ranks driven by one process
// (src/include/alloc.h ncclCuMemAlloc / ncclCuMemFree, src/transport/p2p.cc, the proxy's
// descriptor requests of src/proxy.cc), then the container's per-GPU limits:
//  1. a context per GPU (the primary one, as cudaSetDevice makes it), cuDeviceCanAccessPeer both
//     ways and cuCtxEnablePeerAccess from each context to the other;
//  2. per GPU, the receive buffer its peer writes into: pinned device memory requesting POSIX file
//     descriptors, its size rounded to the minimum granularity, cuMemCreate,
//     cuMemAddressReserve aligned to it, cuMemMap, and cuMemSetAccess for its own GPU and for each
//     GPU that can reach it as a peer; and a cuMemAlloc buffer (the program's own data);
//  3. the descriptor path that NCCL takes for a peer in another process: the owner exports the
//     handle (cuMemExportToShareableHandle), sends the descriptor over a Unix socket
//     (SCM_RIGHTS), and the peer imports it, maps it with alignment 0 and sets access for its GPU;
//  4. copies across the GPUs (a write into the peer's receive buffer through its mapping, both
//     ways with cuMemcpyPeer) and a kernel on each GPU that reads its own buffers and the peer's
//     (simgpu's touch kernel checks that the GPU may address every byte: the peer's VMM memory by
//     the access granted, its cuMemAlloc memory by the peer access enabled);
//  5. the limits, with all of that in place: GPU A filled with cuMemCreate until the driver says
//     out of memory, then, with A full, GPU B filled with cuMemAlloc; everything filled freed, and
//     again with B first;
//  6. teardown as ncclCuMemFree does it, and the cuMemAlloc buffers freed.
// What each GPU is charged is read as the program reads it, cuMemGetInfo in its context (under
// Tessera's library: the container's use against its limit on that GPU).
#include "workload_nccl.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "common/fd_passing.h"

namespace tessera::workload {

namespace {

constexpr int kGpus = 2;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kRecvBytes = 10 * kMiB;  // one channel's LL, LL128 and SIMPLE buffers
constexpr uint64_t kWorkBytes = 4 * kMiB;
// Filling: 64 MiB steps, then 2 MiB (the granule) for the rest, so that a fill ends exactly at the
// limit. Bounded: at most 2^20 steps.
constexpr uint64_t kBigStep = 64 * kMiB;
constexpr uint64_t kSmallStep = 2 * kMiB;
constexpr size_t kMaxSteps = 1u << 20;

bool Check(CUresult rc, const char* what, int gpu) {
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: %s on GPU %d failed: CUresult %d\n", what, gpu,
               static_cast<int>(rc));
  return false;
}

struct Mapping {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  uint64_t size = 0;
};

struct Gpu {
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  uint64_t used_at_start = 0;  // cuMemGetInfo's used bytes before the set-up
  uint64_t own = 0;            // bytes of the set-up this program made on this GPU
  Mapping recv;                // this GPU's receive buffer, mapped for both GPUs
  Mapping imported;            // the other GPU's receive buffer, imported by descriptor
  CUdeviceptr work = 0;        // the cuMemAlloc buffer
  CUfunction touch = nullptr;  // simgpu's touch kernel, loaded in this GPU's context
};

bool Use(const Gpu& g) {
  return Check(cuCtxSetCurrent(g.context), "cuCtxSetCurrent", g.ordinal);
}

// The used device memory of `g` as its context sees it (its context current after).
bool Used(const Gpu& g, uint64_t* used) {
  size_t free = 0, total = 0;
  if (!Use(g) || !Check(cuMemGetInfo(&free, &total), "cuMemGetInfo", g.ordinal)) return false;
  *used = total - free;
  return true;
}

CUmemAllocationProp SharedProp(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  return prop;
}

uint64_t Granularity(const CUmemAllocationProp& prop) {
  size_t g = 0;
  if (cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
      g == 0) {
    return kSmallStep;
  }
  return g;
}

bool GrantAccess(const Mapping& m, int ordinal, int gpu) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return Check(cuMemSetAccess(m.va, m.size, &access, 1), "cuMemSetAccess", gpu);
}

// ncclCuMemAlloc on `g` (its context current): access for `g` and for every GPU that reaches it.
bool CreateReceiveBuffer(Gpu* gpus, Gpu& g, const int can_access[kGpus][kGpus]) {
  CUmemAllocationProp prop = SharedProp(g.ordinal);
  uint64_t granule = Granularity(prop);
  Mapping& m = g.recv;
  m.size = (kRecvBytes + granule - 1) / granule * granule;
  if (!Check(cuMemCreate(&m.handle, m.size, &prop, 0), "cuMemCreate", g.ordinal) ||
      !Check(cuMemAddressReserve(&m.va, m.size, granule, 0, 0), "cuMemAddressReserve", g.ordinal) ||
      !Check(cuMemMap(m.va, m.size, 0, m.handle, 0), "cuMemMap", g.ordinal)) {
    return false;
  }
  for (int i = 0; i < kGpus; ++i) {
    if (i != g.ordinal && can_access[i][g.ordinal] != 1) continue;
    if (!GrantAccess(m, gpus[i].ordinal, g.ordinal)) return false;
  }
  g.own += m.size;
  return true;
}

// The proxy's hand-over of `owner`'s receive buffer to `peer`: exported as a descriptor, sent over
// a Unix socket, imported and mapped by `peer` (its context current after) with access for it.
bool HandOver(const Gpu& owner, Gpu& peer) {
  int fd = -1;
  if (!Use(owner) ||
      !Check(cuMemExportToShareableHandle(&fd, owner.recv.handle,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             "cuMemExportToShareableHandle", owner.ordinal)) {
    return false;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
    std::perror("workload: socketpair");
    close(fd);
    return false;
  }
  bool sent = tessera::SendFd(pair[0], fd);
  close(fd);  // the proxy closes its copy once sent
  int received = sent ? tessera::ReceiveFd(pair[1]) : -1;
  close(pair[0]);
  close(pair[1]);
  if (received < 0) {
    std::fprintf(stderr, "workload: the descriptor did not cross the socket\n");
    return false;
  }
  Mapping& m = peer.imported;
  m.size = owner.recv.size;
  bool ok =
      Use(peer) && Check(cuMemImportFromShareableHandle(
                             &m.handle, reinterpret_cast<void*>(static_cast<intptr_t>(received)),
                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                         "cuMemImportFromShareableHandle", peer.ordinal);
  close(received);
  return ok &&
         Check(cuMemAddressReserve(&m.va, m.size, 0, 0, 0), "cuMemAddressReserve", peer.ordinal) &&
         Check(cuMemMap(m.va, m.size, 0, m.handle, 0), "cuMemMap", peer.ordinal) &&
         GrantAccess(m, peer.ordinal, peer.ordinal);
}

// ncclCuMemFree of `m` (any context current).
bool FreeAsNccl(const Mapping& m, int gpu) {
  CUmemGenericAllocationHandle h = 0;
  size_t size = 0;
  return Check(cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(m.va)),
               "cuMemRetainAllocationHandle", gpu) &&
         Check(cuMemRelease(h), "cuMemRelease", gpu) &&
         Check(cuMemGetAddressRange(nullptr, &size, m.va), "cuMemGetAddressRange", gpu) &&
         Check(cuMemUnmap(m.va, size), "cuMemUnmap", gpu) &&
         Check(cuMemRelease(h), "cuMemRelease", gpu) &&
         Check(cuMemAddressFree(m.va, m.size), "cuMemAddressFree", gpu);
}

// Runs the touch kernel on `g` (its context current) over [p, p + bytes) and waits for it.
bool Touch(const Gpu& g, CUdeviceptr p, uint64_t bytes, const char* what) {
  uint64_t address = p, size = bytes;
  void* params[] = {&address, &size};
  CUresult rc = cuLaunchKernel(g.touch, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: a kernel on GPU %d reading %s failed: CUresult %d\n", g.ordinal,
               what, static_cast<int>(rc));
  return false;
}

// What one fill of a GPU holds until it is freed.
struct Fill {
  bool vmm = false;  // cuMemCreate handles, else cuMemAlloc pointers
  std::vector<uint64_t> blocks;
  uint64_t bytes = 0;
  CUresult error = CUDA_SUCCESS;  // the answer that ended it
};

// Allocates on `g` (its context current) in 64 MiB, then 2 MiB steps until a step is refused.
void FillGpu(const Gpu& g, Fill* f) {
  CUmemAllocationProp prop = SharedProp(g.ordinal);
  for (uint64_t step : {kBigStep, kSmallStep}) {
    while (f->blocks.size() < kMaxSteps) {
      uint64_t block = 0;
      if (f->vmm) {
        CUmemGenericAllocationHandle h = 0;
        f->error = cuMemCreate(&h, step, &prop, 0);
        block = h;
      } else {
        CUdeviceptr p = 0;
        f->error = cuMemAlloc(&p, step);
        block = p;
      }
      if (f->error != CUDA_SUCCESS) break;
      f->blocks.push_back(block);
      f->bytes += step;
    }
    if (f->error != CUDA_ERROR_OUT_OF_MEMORY) return;
  }
}

bool Free(const Gpu& g, const Fill& f) {
  if (!Use(g)) return false;
  for (uint64_t block : f.blocks) {
    CUresult rc = f.vmm ? cuMemRelease(block) : cuMemFree(static_cast<CUdeviceptr>(block));
    if (!Check(rc, f.vmm ? "cuMemRelease" : "cuMemFree", g.ordinal)) return false;
  }
  return true;
}

// GPU `first` filled with cuMemCreate, then, with it full, the other GPU with cuMemAlloc; prints
// how far each got (the set-up's buffers on it included) and the answer that stopped it, as
// limit.<name>.gpu<i>_mib and limit.<name>.gpu<i>_error. Frees both fills.
bool CheckLimits(const Gpu* gpus, int first, const char* name) {
  const Gpu& a = gpus[first];
  const Gpu& b = gpus[1 - first];
  Fill fa, fb;
  fa.vmm = true;
  if (!Use(a)) return false;
  FillGpu(a, &fa);
  if (!Use(b)) return false;
  FillGpu(b, &fb);
  uint64_t a_mib = (a.own + fa.bytes) / kMiB, b_mib = (b.own + fb.bytes) / kMiB;
  std::printf(
      "GPU %d filled with cuMemCreate to %llu MiB (then CUresult %d); with GPU %d full, GPU %d "
      "filled with cuMemAlloc to %llu MiB (then CUresult %d)\n",
      a.ordinal, static_cast<unsigned long long>(a_mib), static_cast<int>(fa.error), a.ordinal,
      b.ordinal, static_cast<unsigned long long>(b_mib), static_cast<int>(fb.error));
  std::printf("limit.%s.gpu%d_mib=%llu\nlimit.%s.gpu%d_error=%d\n", name, a.ordinal,
              static_cast<unsigned long long>(a_mib), name, a.ordinal, static_cast<int>(fa.error));
  std::printf("limit.%s.gpu%d_mib=%llu\nlimit.%s.gpu%d_error=%d\n", name, b.ordinal,
              static_cast<unsigned long long>(b_mib), name, b.ordinal, static_cast<int>(fb.error));
  bool freed = Free(a, fa) && Free(b, fb);
  return freed && fa.error == CUDA_ERROR_OUT_OF_MEMORY && fb.error == CUDA_ERROR_OUT_OF_MEMORY;
}

// NVML's memory total of each GPU, as nvidia-smi shows it in the container.
bool ShowNvmlTotals() {
  bool ok = nvmlInit() == NVML_SUCCESS;
  for (unsigned i = 0; ok && i < kGpus; ++i) {
    nvmlDevice_t device;
    nvmlMemory_t memory;
    ok = nvmlDeviceGetHandleByIndex(i, &device) == NVML_SUCCESS &&
         nvmlDeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS;
    if (ok) {
      std::printf("nvml.gpu%u_total_mib=%llu\n", i,
                  static_cast<unsigned long long>(memory.total / kMiB));
    }
  }
  nvmlShutdown();
  if (!ok) std::fprintf(stderr, "workload: NVML could not describe both GPUs\n");
  return ok;
}

bool OpenGpus(Gpu* gpus) {
  for (int i = 0; i < kGpus; ++i) {
    Gpu& g = gpus[i];
    g.ordinal = i;
    size_t free = 0, total = 0;
    if (!Check(cuDeviceGet(&g.device, i), "cuDeviceGet", i) ||
        !Check(cuDevicePrimaryCtxRetain(&g.context, g.device), "cuDevicePrimaryCtxRetain", i) ||
        !Use(g) || !Check(cuMemGetInfo(&free, &total), "cuMemGetInfo", i)) {
      return false;
    }
    g.used_at_start = total - free;
    std::printf("mem.gpu%d_total_mib=%llu\n", i, static_cast<unsigned long long>(total / kMiB));
  }
  return ShowNvmlTotals();
}

// Step 1's peer queries and cuCtxEnablePeerAccess; false unless both GPUs reach each other.
bool EnablePeers(Gpu* gpus, int can_access[kGpus][kGpus]) {
  for (int i = 0; i < kGpus; ++i) {
    for (int j = 0; j < kGpus; ++j) {
      can_access[i][j] = i == j ? 1 : 0;
      if (i != j && !Check(cuDeviceCanAccessPeer(&can_access[i][j], gpus[i].device, gpus[j].device),
                           "cuDeviceCanAccessPeer", i)) {
        return false;
      }
    }
  }
  bool peers = can_access[0][1] == 1 && can_access[1][0] == 1;
  std::printf("nccl.can_access_peer=%d\n", peers ? 1 : 0);
  if (!peers) {
    std::fprintf(stderr, "workload: the GPUs are not peers: NCCL would not use P2P\n");
    return false;
  }
  for (int i = 0; i < kGpus; ++i) {
    if (!Use(gpus[i]) ||
        !Check(cuCtxEnablePeerAccess(gpus[1 - i].context, 0), "cuCtxEnablePeerAccess", i)) {
      return false;
    }
  }
  std::printf("nccl.peer_access=ok\n");
  return true;
}

// Steps 2 and 3; prints what each GPU was charged for its own buffers and for the imports.
bool SetUpBuffers(Gpu* gpus, const int can_access[kGpus][kGpus]) {
  for (int i = 0; i < kGpus; ++i) {
    Gpu& g = gpus[i];
    if (!Use(g) || !CreateReceiveBuffer(gpus, g, can_access) ||
        !Check(cuMemAlloc(&g.work, kWorkBytes), "cuMemAlloc", i)) {
      return false;
    }
    g.own += kWorkBytes;
  }
  uint64_t used[kGpus];
  for (int i = 0; i < kGpus; ++i) {
    if (!Used(gpus[i], &used[i])) return false;
    std::printf("nccl.gpu%d_own_mib=%llu\nnccl.gpu%d_charged_mib=%llu\n", i,
                static_cast<unsigned long long>(gpus[i].own / kMiB), i,
                static_cast<unsigned long long>((used[i] - gpus[i].used_at_start) / kMiB));
  }
  for (int i = 0; i < kGpus; ++i) {
    if (!HandOver(gpus[i], gpus[1 - i])) return false;
  }
  for (int i = 0; i < kGpus; ++i) {
    uint64_t now = 0;
    if (!Used(gpus[i], &now)) return false;
    // Signed: an import that lowered the charge would be as wrong as one that raised it.
    std::printf("nccl.gpu%d_import_charged_mib=%lld\n", i,
                static_cast<long long>(now - used[i]) / static_cast<long long>(kMiB));
  }
  return true;
}

// Step 4.
bool CopiesAndKernels(Gpu* gpus) {
  static const char kImage[] = "tessera demo workload nccl";
  for (int i = 0; i < kGpus; ++i) {
    const Gpu& g = gpus[i];
    const Gpu& peer = gpus[1 - i];
    // The P2P transport's write into the peer's receive buffer, through both its mappings.
    if (!Use(g) ||
        !Check(cuMemcpyDtoD(peer.recv.va, g.work, kWorkBytes), "cuMemcpyDtoD (peer's buffer)", i) ||
        !Check(cuMemcpyDtoD(g.imported.va, g.work, kWorkBytes), "cuMemcpyDtoD (imported)", i) ||
        !Check(cuMemcpyPeer(peer.work, peer.context, g.work, g.context, kWorkBytes), "cuMemcpyPeer",
               i)) {
      return false;
    }
  }
  std::printf("nccl.copies=ok\n");
  for (int i = 0; i < kGpus; ++i) {
    Gpu& g = gpus[i];
    const Gpu& peer = gpus[1 - i];
    CUmodule module;
    if (!Use(g) || !Check(cuModuleLoadData(&module, kImage), "cuModuleLoadData", i) ||
        !Check(cuModuleGetFunction(&g.touch, module, "touch_1000ns"), "cuModuleGetFunction", i)) {
      return false;
    }
    bool ok = Touch(g, g.recv.va, g.recv.size, "its receive buffer") &&
              Touch(g, g.work, kWorkBytes, "its cuMemAlloc buffer") &&
              Touch(g, peer.recv.va, peer.recv.size, "the peer's receive buffer") &&
              Touch(g, g.imported.va, g.imported.size, "the peer's buffer it imported") &&
              Touch(g, peer.work, kWorkBytes, "the peer's cuMemAlloc buffer");
    std::printf("nccl.kernel_gpu%d=%s\n", i, ok ? "ok" : "failed");
    if (!ok) return false;
  }
  return true;
}

// Step 6; prints whether each GPU is back to what it used before the set-up.
bool TearDown(Gpu* gpus) {
  for (int i = 0; i < kGpus; ++i) {
    const Gpu& g = gpus[i];
    if (!Use(g) || !FreeAsNccl(g.imported, i) || !FreeAsNccl(g.recv, i) ||
        !Check(cuMemFree(g.work), "cuMemFree", i)) {
      return false;
    }
  }
  bool released = true;
  for (int i = 0; i < kGpus; ++i) {
    uint64_t used = 0;
    if (!Used(gpus[i], &used)) return false;
    released = released && used == gpus[i].used_at_start;
  }
  std::printf("nccl.released=%d\n", released ? 1 : 0);
  return released;
}

}  // namespace

int Nccl() {
  int count = 0;
  if (!Check(cuDeviceGetCount(&count), "cuDeviceGetCount", 0)) return 1;
  std::printf("nccl.gpus=%d\n", count);
  if (count < kGpus) {
    std::fprintf(stderr, "workload: --nccl needs two GPUs; this process sees %d\n", count);
    return 2;
  }
  Gpu gpus[kGpus];
  int can_access[kGpus][kGpus];
  if (!OpenGpus(gpus) || !EnablePeers(gpus, can_access) || !SetUpBuffers(gpus, can_access) ||
      !CopiesAndKernels(gpus)) {
    return 1;
  }
  std::fflush(stdout);
  bool limits = CheckLimits(gpus, 0, "gpu0_first");
  limits = CheckLimits(gpus, 1, "gpu1_first") && limits;
  bool ok = TearDown(gpus) && limits;
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace tessera::workload
