// NCCL's NVLS buffers (NVLink SHARP multicast) on a single node, as its sources do it
// (src/transport/nvls.cc nvlsAllocateMem / ncclNvlsFree, with the descriptor requests of
// src/proxy.cc), each rank on its own GPU of an NVSwitch board:
//  1. gate: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED;
//  2. the multicast object: numDevices = the ranks, POSIX file descriptors, its size rounded to the
//     recommended multicast granularity; local rank 0 creates it and the others get a descriptor
//     from its proxy (cuMemExportToShareableHandle, sent with SCM_RIGHTS) and import it;
//  3. every rank adds its device, then makes its unicast memory: cuMemAddressReserve (before the
//     create), cuMemCreate on its device, cuMemMap, cuMemSetAccess, a memset;
//  4. after a barrier (every device added), cuMulticastBindMem of its memory, then
//     cuMemAddressReserve + cuMemMap + cuMemSetAccess of the multicast object;
//  5. teardown: cuMulticastUnbind, unmap/free/release of the unicast memory, then of the multicast
//     mapping and handle.
#include <unistd.h>

#include <string>
#include <vector>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBufferBytes = 12 * kMiB;  // nChannels * 2 * chunk * steps * heads, rounded

CUmemAccessDesc Access(int ordinal) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

}  // namespace

int NcclNvls(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  const int me = rank.rank();
  if (!UseDevice(calls, me)) return 1;
  int supported = 0;
  calls.Note("cuDeviceGetAttribute",
             api.DeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, me));
  if (supported != 1) {
    std::fprintf(stderr, "replay: no multicast support: NCCL would not use NVLS\n");
    return 1;
  }
  CUmulticastObjectProp mcprop{};
  mcprop.numDevices = static_cast<unsigned>(rank.size());
  mcprop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  mcprop.size = kBufferBytes;
  size_t mcgran = 0;
  calls.Note("cuMulticastGetGranularity",
             api.MulticastGetGranularity(&mcgran, &mcprop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  uint64_t size = (kBufferBytes + mcgran - 1) / mcgran * mcgran;
  mcprop.size = size;
  CUmemGenericAllocationHandle mc = 0;
  std::vector<int> fds;
  if (me == 0) {
    calls.Note("cuMulticastCreate", api.MulticastCreate(&mc, &mcprop));
    for (int r = 1; r < rank.size(); ++r) {  // one descriptor per request
      int fd = -1;
      calls.Note(
          "cuMemExportToShareableHandle",
          api.MemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      fds.push_back(fd);
    }
  }
  std::vector<std::vector<int>> received;
  rank.AllGather("", fds, &received);
  for (int fd : fds) close(fd);
  for (size_t i = 0; i < received[0].size(); ++i) {
    int fd = received[0][i];
    if (me != 0 && i == static_cast<size_t>(me - 1)) {
      calls.Note(
          "cuMemImportFromShareableHandle",
          api.MemImportFromShareableHandle(&mc, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    close(fd);
  }
  calls.Note("cuMulticastAddDevice", api.MulticastAddDevice(mc, me));

  CUmemAllocationProp ucprop{};
  ucprop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  ucprop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  ucprop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ucprop.location.id = me;
  size_t ucgran = 0;
  calls.Note(
      "cuMemGetAllocationGranularity",
      api.MemGetAllocationGranularity(&ucgran, &ucprop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  CUdeviceptr uc = 0;
  CUmemGenericAllocationHandle uch = 0;
  CUmemAccessDesc access = Access(me);
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&uc, size, ucgran, 0, 0));
  calls.Note("cuMemCreate", api.MemCreate(&uch, size, &ucprop, 0));
  calls.Own(size);
  calls.Note("cuMemMap", api.MemMap(uc, size, 0, uch, 0));
  calls.Note("cuMemSetAccess", api.MemSetAccess(uc, size, &access, 1));
  calls.Note("cuMemsetD8", api.MemsetD8(uc, 0, size));
  rank.Barrier();  // bootstrapIntraNodeBarrier: every device added
  calls.Note("cuMulticastBindMem", api.MulticastBindMem(mc, 0, uch, 0, size, 0));
  CUdeviceptr mcva = 0;
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&mcva, size, mcgran, 0, 0));
  calls.Note("cuMemMap", api.MemMap(mcva, size, 0, mc, 0));
  calls.Note("cuMemSetAccess", api.MemSetAccess(mcva, size, &access, 1));
  calls.Note("cuMemsetD8", api.MemsetD8(mcva, 1, size));  // a multimem store
  calls.Note("cuCtxSynchronize", api.CtxSynchronize());

  calls.MeasurePeak(me, static_cast<unsigned>(me));
  rank.Barrier();

  calls.Note("cuMulticastUnbind", api.MulticastUnbind(mc, me, 0, size));
  calls.Note("cuMemUnmap", api.MemUnmap(uc, size));
  calls.Note("cuMemAddressFree", api.MemAddressFree(uc, size));
  calls.Note("cuMemRelease", api.MemRelease(uch));
  calls.Note("cuMemUnmap", api.MemUnmap(mcva, size));
  calls.Note("cuMemAddressFree", api.MemAddressFree(mcva, size));
  calls.Note("cuMemRelease", api.MemRelease(mc));
  return calls.ok() ? 0 : 1;
}

}  // namespace tessera::replay
