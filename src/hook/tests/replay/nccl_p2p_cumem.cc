// NCCL's intra-node P2P buffers over cuMem, as its sources do it (src/include/alloc.h
// ncclCuMemAlloc / ncclCuMemFree, src/transport/p2p.cc, src/proxy.cc's descriptor requests over
// Unix sockets), for one channel between every pair of ranks, each rank on its own GPU:
//  1. each rank allocates, for every peer, the receive buffer the peer will write into (LL, LL128
//     and SIMPLE protocols: 10 MiB): a pinned device allocation requesting POSIX file descriptors,
//     its size rounded to the minimum granularity, then cuMemCreate, cuMemAddressReserve (aligned
//     to the granularity), cuMemMap, cuMemSetAccess for its own device; the handle is kept;
//  2. the handle values travel over bootstrap; each peer asks the owner's proxy for a descriptor,
//     which the owner makes with cuMemExportToShareableHandle and sends with SCM_RIGHTS, closing
//     its copy (here: one all-gather with the descriptors attached);
//  3. the peer imports it (cuMemImportFromShareableHandle, then closes the descriptor), reserves
//     with alignment 0, maps and sets access for its own device, and writes through the mapping;
//  4. teardown (ncclCuMemFree), importers and owners alike, with no barrier between them:
//     cuMemRetainAllocationHandle on the address, cuMemRelease of that reference,
//     cuMemGetAddressRange for the size, cuMemUnmap, cuMemRelease (the creation or import
//     reference), cuMemAddressFree.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "nccl_cumem.h"
#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kRecvBytes = 10 * kMiB;

}  // namespace

int NcclP2pCuMem(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  const int me = rank.rank(), n = rank.size();
  if (!UseDevice(calls, me)) return 1;
  const CUmemAllocationProp prop = SharedProp(CU_MEM_LOCATION_TYPE_DEVICE, me);
  std::vector<CuMemBuffer> mine(static_cast<size_t>(n));  // by the peer that writes into it
  std::vector<int> fds;                                   // in peer order, skipping this rank
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    CuMemBuffer& b = mine[static_cast<size_t>(p)];
    b = CreateMapped(calls, prop, kRecvBytes);
    calls.Own(b.size);
    SetAccess(calls, b, CU_MEM_LOCATION_TYPE_DEVICE, me);
    int fd = -1;
    calls.Note(
        "cuMemExportToShareableHandle",
        api.MemExportToShareableHandle(&fd, b.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    fds.push_back(fd);
  }
  std::vector<std::vector<int>> received;
  rank.AllGather("", fds, &received);
  for (int fd : fds) close(fd);  // the proxy closes its copy once sent

  std::vector<CuMemBuffer> theirs;  // the peers' receive buffers for this rank
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    // Peer p's descriptors are in its peer order; this rank's is at its index among p's peers.
    size_t at = static_cast<size_t>(me < p ? me : me - 1);
    const std::vector<int>& from = received[static_cast<size_t>(p)];
    for (size_t i = 0; i < from.size(); ++i) {
      if (i == at) {
        theirs.push_back(ImportMapped(calls, prop, from[i], kRecvBytes));
        SetAccess(calls, theirs.back(), CU_MEM_LOCATION_TYPE_DEVICE, me);
      } else {
        close(from[i]);
      }
    }
  }
  for (const CuMemBuffer& b : theirs) calls.Note("cuMemsetD8", api.MemsetD8(b.va, 1, b.size));
  calls.Note("cuCtxSynchronize", api.CtxSynchronize());

  calls.MeasurePeak(me, static_cast<unsigned>(me));
  rank.Barrier();  // every rank measured with every buffer mapped

  for (const CuMemBuffer& b : theirs) FreeAsNccl(calls, b);
  for (int p = 0; p < n; ++p) {
    if (p != me) FreeAsNccl(calls, mine[static_cast<size_t>(p)]);
  }
  return calls.ok() ? 0 : 1;
}

}  // namespace tessera::replay
