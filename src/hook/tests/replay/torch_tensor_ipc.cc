// A CUDA tensor sent to another process with torch.multiprocessing, as PyTorch's sources do it
// (torch/multiprocessing/reductions.py, torch/csrc/StorageSharing.cpp, CudaIPCTypes.cpp), both
// processes on device 0 (a data-loader worker and its trainer):
//  sender:   the tensor lives in a caching-allocator segment; its block's base is exported with
//            cudaIpcGetMemHandle (the offset sent beside it); an event made with
//            DisableTiming | Interprocess | BlockingSync is recorded on the current stream and
//            its handle sent too; the block is kept until the receiver drops its reference;
//  receiver: opens the event and makes its stream wait for it, opens the memory handle with
//            cudaIpcMemLazyEnablePeerAccess, reads the tensor at base + offset, then closes the
//            handle and drops the reference (the shared ref-counter: here a barrier);
//  sender:   frees the segment (torch: when its cache is emptied).
#include <cstring>
#include <string>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSegmentBytes = 20 * kMiB;
constexpr uint64_t kTensorOffset = 2 * kMiB + 512;
constexpr uint64_t kTensorBytes = kMiB;
constexpr uint64_t kCopyBytes = 4 * kMiB;  // the receiver's own buffer

struct Sent {
  uint64_t offset;
  uint64_t bytes;
};

int Sender(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  CUdeviceptr segment = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&segment, kSegmentBytes));
  calls.Own(kSegmentBytes);
  CUdeviceptr tensor = segment + kTensorOffset;
  calls.Note("cuMemsetD8", api.MemsetD8(tensor, 7, kTensorBytes));  // the tensor's values
  CUdeviceptr base = 0;
  size_t size = 0;
  calls.Note("cuMemGetAddressRange", api.MemGetAddressRange(&base, &size, tensor));
  CUipcMemHandle mem{};
  calls.Note("cuIpcGetMemHandle", api.IpcGetMemHandle(&mem, base));
  CUevent ev = nullptr;
  calls.Note("cuEventCreate", api.EventCreate(&ev, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS |
                                                       CU_EVENT_BLOCKING_SYNC));
  calls.Note("cuEventRecord", api.EventRecord(ev, nullptr));
  CUipcEventHandle event{};
  calls.Note("cuIpcGetEventHandle", api.IpcGetEventHandle(&event, ev));
  Sent sent{tensor - base, kTensorBytes};
  rank.AllGather(BytesOf(mem) + BytesOf(event) +
                 std::string(reinterpret_cast<const char*>(&sent), sizeof(sent)));
  rank.Barrier();  // the receiver holds the tensor
  calls.MeasurePeak(0, 0);
  rank.Barrier();  // both measured
  rank.Barrier();  // the receiver dropped its reference
  calls.Note("cuEventDestroy", api.EventDestroy(ev));
  calls.Note("cuMemFree", api.MemFree(segment));
  return calls.ok() ? 0 : 1;
}

int Receiver(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  std::string message = rank.AllGather("")[0];
  if (message.size() != 2 * CU_IPC_HANDLE_SIZE + sizeof(Sent)) return 1;
  auto mem = HandleFrom<CUipcMemHandle>(message.substr(0, CU_IPC_HANDLE_SIZE));
  auto event = HandleFrom<CUipcEventHandle>(message.substr(CU_IPC_HANDLE_SIZE, CU_IPC_HANDLE_SIZE));
  Sent sent{};
  std::memcpy(&sent, message.data() + 2 * CU_IPC_HANDLE_SIZE, sizeof(sent));
  CUevent ev = nullptr;
  calls.Note("cuIpcOpenEventHandle", api.IpcOpenEventHandle(&ev, event));
  calls.Note("cuStreamWaitEvent", api.StreamWaitEvent(nullptr, ev, 0));
  CUdeviceptr base = 0;
  calls.Note("cuIpcOpenMemHandle",
             api.IpcOpenMemHandle(&base, mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CUdeviceptr copy = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&copy, kCopyBytes));
  calls.Own(kCopyBytes);
  calls.Note("cuMemcpyDtoD", api.MemcpyDtoD(copy, base + sent.offset, sent.bytes));
  calls.Note("cuCtxSynchronize", api.CtxSynchronize());
  rank.Barrier();  // the receiver holds the tensor
  calls.MeasurePeak(0, 0);
  rank.Barrier();  // both measured
  calls.Note("cuIpcCloseMemHandle", api.IpcCloseMemHandle(base));
  calls.Note("cuMemFree", api.MemFree(copy));
  rank.Barrier();  // the reference dropped
  return calls.ok() ? 0 : 1;
}

}  // namespace

int TorchTensorIpc(Rank& rank, Calls& calls) {
  if (rank.size() != 2) return 2;
  if (!UseDevice(calls, 0)) return 1;
  return rank.rank() == 0 ? Sender(rank, calls) : Receiver(rank, calls);
}

}  // namespace tessera::replay
