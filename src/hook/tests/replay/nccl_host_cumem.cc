// NCCL's host memory over cuMem, as its sources do it (src/include/alloc.h ncclCuMemHostAlloc,
// the shared-memory transport's buffers, shared through the proxy's descriptor requests): with
// NCCL_CUMEM_HOST_ENABLE (the default from driver 12.6)
//  1. it probes once: cuDeviceGetAttribute(HOST_NUMA_ID) (a negative answer means node 0), a
//     HOST_NUMA cuMemCreate of one granule, released at once;
//  2. each rank allocates the buffer its peer will write into: the HOST_NUMA prop requesting POSIX
//     descriptors, the minimum granularity, cuMemCreate, cuMemAddressReserve aligned to it,
//     cuMemMap, cuMemSetAccess for its device and then a second cuMemSetAccess for the host node;
//  3. the owner exports a descriptor and sends it (here: one all-gather); the peer imports it,
//     reserves with alignment 0, maps, sets access for its device, then for the host node, and
//     its CPU writes through the mapping, which the owner's CPU reads;
//  4. teardown as ncclCuMemFree (nccl_cumem.h).
// Host memory is not device memory: no rank owns any device bytes for it.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "nccl_cumem.h"
#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kShmBytes = 9 * kMiB;  // a shared-memory transport's FIFO and buffers

// The device's access, then the host node's: two calls, as NCCL makes them.
void SetDeviceAndHostAccess(Calls& calls, const CuMemBuffer& b, int ordinal, int numa) {
  SetAccess(calls, b, CU_MEM_LOCATION_TYPE_DEVICE, ordinal);
  SetAccess(calls, b, CU_MEM_LOCATION_TYPE_HOST_NUMA, numa);
}

// The CPU's view of a mapped buffer's first word.
std::atomic<uint64_t>* Word(const CuMemBuffer& b) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<uintptr_t>(b.va));
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "nccl-host-cumem: %s\n", why.c_str());
  return 1;
}

}  // namespace

int NcclHostCuMem(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  const int me = rank.rank(), n = rank.size(), peer = (me + 1) % n;
  if (!UseDevice(calls, me)) return 1;
  int numa = -1;
  calls.Note("cuDeviceGetAttribute",
             api.DeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, me));
  if (numa < 0) numa = 0;
  const CUmemAllocationProp prop = SharedProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa);
  {  // the probe
    CUmemGenericAllocationHandle probe = 0;
    calls.Note("cuMemCreate", api.MemCreate(&probe, MinimumGranularity(calls, prop), &prop, 0));
    calls.Note("cuMemRelease", api.MemRelease(probe));
  }
  // The buffer the previous rank writes into (a ring: rank r writes into rank r+1's).
  CuMemBuffer mine = CreateMapped(calls, prop, kShmBytes);
  SetDeviceAndHostAccess(calls, mine, me, numa);
  int fd = -1;
  calls.Note("cuMemExportToShareableHandle",
             api.MemExportToShareableHandle(&fd, mine.handle,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  std::vector<std::vector<int>> received;
  rank.AllGather("", {fd}, &received);
  close(fd);
  for (int p = 0; p < n; ++p) {
    if (p == peer) continue;
    for (int other : received[static_cast<size_t>(p)]) close(other);
  }
  const std::vector<int>& from = received[static_cast<size_t>(peer)];
  if (from.size() != 1) return Fail("no descriptor from rank " + std::to_string(peer));
  CuMemBuffer theirs = ImportMapped(calls, prop, from[0], kShmBytes);
  SetDeviceAndHostAccess(calls, theirs, me, numa);
  if (!calls.ok()) return 1;

  Word(theirs)->store(0x5e11000 + static_cast<uint64_t>(me));  // into the peer's buffer
  rank.Barrier();
  const uint64_t expected = 0x5e11000 + static_cast<uint64_t>((me + n - 1) % n);
  if (Word(mine)->load() != expected) {
    return Fail("this rank's host buffer does not hold what the previous rank wrote");
  }
  calls.MeasurePeak(me, static_cast<unsigned>(me));
  rank.Barrier();  // every rank measured with both buffers mapped

  FreeAsNccl(calls, theirs);
  FreeAsNccl(calls, mine);
  return calls.ok() ? 0 : 1;
}

}  // namespace tessera::replay
