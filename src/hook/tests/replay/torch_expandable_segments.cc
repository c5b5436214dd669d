// A tensor in one of PyTorch's expandable segments sent to another process on the same GPU, as
// its sources do it (c10/cuda/CUDACachingAllocator.cpp ExpandableSegment, shareIpcHandle,
// getIpcDevPtr):
//  sender:   reserves 1.125 x the GPU's memory of address space for the segment, then grows it by
//            20 MiB pages: a cuMemCreate per page (pinned, on its device, POSIX file descriptors
//            requested), a cuMemMap per page, one cuMemSetAccess over the new range; to share a
//            block it exports each page under it (cuMemExportToShareableHandle, kept open) and
//            sends its PID, the page size and the descriptors' numbers;
//  receiver: pidfd_open(sender) and pidfd_getfd for each number, cuMemImportFromShareableHandle
//            and close for each, its own reservation, a map per page and one cuMemSetAccess, reads
//            the block; on its last use synchronises, unmaps and releases each page and frees the
//            reservation;
//  sender:   shrinks when its cache is emptied: synchronises, then per page cuMemUnmap, close of
//            the exported descriptor, cuMemRelease; frees the reservation at the end.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kPage = 20 * kMiB;  // kLargeBuffer
constexpr int kPages = 3;
constexpr int kSharedFirst = 1, kSharedPages = 2;  // the block spans pages 1 and 2
constexpr uint64_t kBlockOffset = 4 * kMiB;        // within the first shared page

struct Header {
  int32_t pid;
  uint64_t page;
  uint64_t count;
  uint64_t offset;
};

uint64_t Reservation(Calls& calls) {
  CUdevice dev = 0;
  size_t total = 0;
  calls.Note("cuDeviceGet", calls.api().DeviceGet(&dev, 0));
  calls.Note("cuDeviceTotalMem", calls.api().DeviceTotalMem(&total, dev));
  return (total + total / 8 + kPage - 1) / kPage * kPage;
}

void MapPages(Calls& calls, CUdeviceptr base, const std::vector<CUmemGenericAllocationHandle>& h) {
  for (size_t i = 0; i < h.size(); ++i) {
    calls.Note("cuMemMap", calls.api().MemMap(base + i * kPage, kPage, 0, h[i], 0));
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  calls.Note("cuMemSetAccess", calls.api().MemSetAccess(base, h.size() * kPage, &access, 1));
}

void UnmapPages(Calls& calls, CUdeviceptr base, const std::vector<CUmemGenericAllocationHandle>& h,
                const std::vector<int>& exported) {
  calls.Note("cuCtxSynchronize", calls.api().CtxSynchronize());
  for (size_t i = 0; i < h.size(); ++i) {
    calls.Note("cuMemUnmap", calls.api().MemUnmap(base + i * kPage, kPage));
    if (i < exported.size() && exported[i] >= 0) close(exported[i]);
    calls.Note("cuMemRelease", calls.api().MemRelease(h[i]));
  }
}

int Sender(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  uint64_t reserved = Reservation(calls);
  CUdeviceptr base = 0;
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&base, reserved, 0, 0, 0));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  std::vector<CUmemGenericAllocationHandle> pages(kPages);
  for (auto& h : pages) {
    calls.Note("cuMemCreate", api.MemCreate(&h, kPage, &prop, 0));
    calls.Own(kPage);
  }
  MapPages(calls, base, pages);
  std::vector<int> exported(kPages, -1);
  std::string message;
  Header header{static_cast<int32_t>(getpid()), kPage, kSharedPages, kBlockOffset};
  message.append(reinterpret_cast<const char*>(&header), sizeof(header));
  for (int i = kSharedFirst; i < kSharedFirst + kSharedPages; ++i) {
    calls.Note("cuMemExportToShareableHandle",
               api.MemExportToShareableHandle(&exported[static_cast<size_t>(i)],
                                              pages[static_cast<size_t>(i)],
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int32_t number = exported[static_cast<size_t>(i)];
    message.append(reinterpret_cast<const char*>(&number), sizeof(number));
  }
  rank.AllGather(message);
  rank.Barrier();  // the receiver mapped the block
  calls.MeasurePeak(0, 0);
  rank.Barrier();  // both measured
  rank.Barrier();  // the receiver let go
  UnmapPages(calls, base, pages, exported);
  calls.Note("cuMemAddressFree", api.MemAddressFree(base, reserved));
  return calls.ok() ? 0 : 1;
}

int Receiver(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  std::string message = rank.AllGather("")[0];
  Header header{};
  if (message.size() < sizeof(header)) return 1;
  std::memcpy(&header, message.data(), sizeof(header));
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, header.pid, 0));
  if (pidfd < 0) {
    std::fprintf(stderr, "replay: pidfd_open: %s\n", std::strerror(errno));
    return errno == ENOSYS ? kCannotRun : 1;
  }
  std::vector<CUmemGenericAllocationHandle> pages;
  for (uint64_t i = 0; i < header.count; ++i) {
    int32_t number = -1;
    std::memcpy(&number, message.data() + sizeof(header) + i * sizeof(number), sizeof(number));
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, number, 0));
    if (fd < 0) {
      // Another process's descriptor needs the right to trace it (Yama's ptrace_scope may
      // refuse it between siblings), as for PyTorch itself.
      std::fprintf(stderr, "replay: pidfd_getfd: %s\n", std::strerror(errno));
      return errno == EPERM || errno == ENOSYS ? kCannotRun : 1;
    }
    CUmemGenericAllocationHandle h = 0;
    calls.Note(
        "cuMemImportFromShareableHandle",
        api.MemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    pages.push_back(h);
  }
  close(pidfd);
  uint64_t reserved = Reservation(calls);
  CUdeviceptr base = 0;
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&base, reserved, 0, 0, 0));
  MapPages(calls, base, pages);
  CUdeviceptr copy = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&copy, 8 * kMiB));
  calls.Own(8 * kMiB);
  calls.Note("cuMemcpyDtoD", api.MemcpyDtoD(copy, base + header.offset, 8 * kMiB));
  calls.Note("cuCtxSynchronize", api.CtxSynchronize());
  rank.Barrier();  // the block is mapped
  calls.MeasurePeak(0, 0);
  rank.Barrier();  // both measured
  UnmapPages(calls, base, pages, {});
  calls.Note("cuMemAddressFree", api.MemAddressFree(base, reserved));
  calls.Note("cuMemFree", api.MemFree(copy));
  rank.Barrier();  // let go
  return calls.ok() ? 0 : 1;
}

}  // namespace

int TorchExpandableSegments(Rank& rank, Calls& calls) {
  if (rank.size() != 2) return 2;
  if (!UseDevice(calls, 0)) return 1;
  return rank.rank() == 0 ? Sender(rank, calls) : Receiver(rank, calls);
}

}  // namespace tessera::replay
