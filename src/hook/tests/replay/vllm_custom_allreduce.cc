// vLLM's custom all-reduce between tensor-parallel workers, as its sources do it
// (vllm/distributed/device_communicators/custom_all_reduce.py, csrc/custom_all_reduce.cuh):
//  0. the gates: NVML's NVLink status between every pair of the workers' GPUs (custom all-reduce
//     needs them fully connected beyond 2 GPUs), then cudaDeviceCanAccessPeer to the first peer;
//  1. every worker uses device `rank` and makes two shared buffers: the signal area plus the
//     staging buffer, then the staging buffer for registered inputs; each is cudaMalloc'ed,
//     zeroed with cudaMemset, exported with cudaIpcGetMemHandle and the handles all-gathered;
//     the others' handles are opened with cudaIpcMemLazyEnablePeerAccess;
//  2. an 8 MiB rank-data buffer of its own (never shared);
//  3. after CUDA-graph capture, the captured inputs (tensors inside the caching allocator's
//     segments) are registered: each input's allocation base is looked up, its handle taken with
//     cudaIpcGetMemHandle(base) and sent with the input's offset; every worker opens the others'
//     handles once (a handle already open is reused) and adds the offsets;
//  4. the all-reduce kernels write into the peers' buffers and flags (here: copies and memsets
//     through the opened pointers);
//  5. teardown: the C++ object closes the graph buffers' handles; the Python side frees its own
//     shared buffers with cudaFree and leaves the peers' opened pointers to process exit.
#include <cstring>
#include <map>
#include <string>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSignalBytes = 2560;  // sizeof(vllm::Signal): 36 blocks, 8 ranks
constexpr uint64_t kMaxSize = 8 * kMiB;  // the default max_size
constexpr uint64_t kRankDataBytes = 8 * kMiB;
constexpr uint64_t kSegmentBytes = 20 * kMiB;              // a caching-allocator segment
constexpr uint64_t kInputOffsets[] = {0, 2 * kMiB + 512};  // two captured inputs in it

// create_shared_buffer: this worker's pointer and the others' opened ones, in rank order.
std::vector<CUdeviceptr> CreateSharedBuffer(Rank& rank, Calls& calls, uint64_t bytes) {
  const hooktest::Api& api = calls.api();
  CUdeviceptr mine = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&mine, bytes));
  calls.Own(RoundUpToGranule(bytes));
  calls.Note("cuMemsetD8", api.MemsetD8(mine, 0, bytes));
  CUipcMemHandle h{};
  calls.Note("cuIpcGetMemHandle", api.IpcGetMemHandle(&h, mine));
  std::vector<std::string> handles = rank.AllGather(BytesOf(h));
  std::vector<CUdeviceptr> pointers;
  for (int r = 0; r < rank.size(); ++r) {
    CUdeviceptr p = mine;
    if (r != rank.rank()) {
      calls.Note(
          "cuIpcOpenMemHandle",
          api.IpcOpenMemHandle(&p, HandleFrom<CUipcMemHandle>(handles[static_cast<size_t>(r)]),
                               CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    }
    pointers.push_back(p);
  }
  return pointers;
}

}  // namespace

// is_fully_connected and _can_p2p: whether custom all-reduce may run on these GPUs.
bool FullyConnected(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  calls.Note("nvmlInit", api.NvmlInit());
  std::vector<nvmlDevice_t> devices(static_cast<size_t>(rank.size()));
  for (int i = 0; i < rank.size(); ++i) {
    calls.Note("nvmlDeviceGetHandleByIndex",
               api.NvmlHandleByIndex(static_cast<unsigned>(i), &devices[static_cast<size_t>(i)]));
  }
  bool nvlink = true;
  for (int i = 0; i < rank.size(); ++i) {
    for (int j = i + 1; j < rank.size(); ++j) {
      nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
      calls.Note("nvmlDeviceGetP2PStatus",
                 api.NvmlP2PStatus(devices[static_cast<size_t>(i)], devices[static_cast<size_t>(j)],
                                   NVML_P2P_CAPS_INDEX_NVLINK, &status));
      nvlink = nvlink && status == NVML_P2P_STATUS_OK;
    }
  }
  int can = 0;
  calls.Note("cuDeviceCanAccessPeer",
             api.DeviceCanAccessPeer(&can, rank.rank(), rank.rank() == 0 ? 1 : 0));
  return (nvlink || rank.size() <= 2) && can == 1;
}

int VllmCustomAllReduce(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  if (!UseDevice(calls, rank.rank())) return 1;
  if (!FullyConnected(rank, calls)) {
    std::fprintf(stderr,
                 "replay: the GPUs are not fully connected: vLLM would not use custom "
                 "all-reduce\n");
    return 1;
  }
  std::vector<CUdeviceptr> meta = CreateSharedBuffer(rank, calls, kSignalBytes + kMaxSize);
  std::vector<CUdeviceptr> buffers = CreateSharedBuffer(rank, calls, kMaxSize);
  CUdeviceptr rank_data = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&rank_data, kRankDataBytes));
  calls.Own(kRankDataBytes);

  // Graph capture put two inputs in one segment of the caching allocator; register them.
  CUdeviceptr segment = 0;
  calls.Note("cuMemAlloc", api.MemAlloc(&segment, kSegmentBytes));
  calls.Own(kSegmentBytes);
  std::string sent;
  for (uint64_t offset : kInputOffsets) {
    CUdeviceptr base = 0;
    calls.Note(
        "cuPointerGetAttribute",
        api.PointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, segment + offset));
    CUipcMemHandle h{};
    calls.Note("cuIpcGetMemHandle", api.IpcGetMemHandle(&h, base));
    uint64_t within = segment + offset - base;
    sent += BytesOf(h) + std::string(reinterpret_cast<const char*>(&within), sizeof(within));
  }
  std::vector<std::string> registered = rank.AllGather(sent);
  std::map<std::string, CUdeviceptr> opened;  // handle bytes -> pointer, as ipc_handles_
  std::vector<CUdeviceptr> inputs;            // the peers' inputs
  for (int r = 0; r < rank.size(); ++r) {
    if (r == rank.rank()) continue;
    const std::string& theirs = registered[static_cast<size_t>(r)];
    for (size_t at = 0; at + CU_IPC_HANDLE_SIZE + 8 <= theirs.size();
         at += CU_IPC_HANDLE_SIZE + 8) {
      std::string key = theirs.substr(at, CU_IPC_HANDLE_SIZE);
      uint64_t within = 0;
      std::memcpy(&within, theirs.data() + at + CU_IPC_HANDLE_SIZE, sizeof(within));
      auto it = opened.find(key);
      if (it == opened.end()) {
        CUdeviceptr p = 0;
        calls.Note("cuIpcOpenMemHandle", api.IpcOpenMemHandle(&p, HandleFrom<CUipcMemHandle>(key),
                                                              CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        it = opened.emplace(key, p).first;
      }
      inputs.push_back(it->second + within);
    }
  }

  // One all-reduce: this rank's chunk into every peer's staging buffer, their flags raised.
  const uint64_t chunk = kMaxSize / static_cast<uint64_t>(rank.size());
  for (int r = 0; r < rank.size(); ++r) {
    CUdeviceptr dst = buffers[static_cast<size_t>(r)] + chunk * static_cast<uint64_t>(rank.rank());
    calls.Note("cuMemcpyDtoD", api.MemcpyDtoD(dst, rank_data, chunk));
    calls.Note("cuMemsetD8", api.MemsetD8(meta[static_cast<size_t>(r)] + 128 * rank.rank(), 1, 4));
  }
  for (CUdeviceptr input : inputs)
    calls.Note("cuMemcpyDtoD", api.MemcpyDtoD(rank_data, input, 512));
  calls.Note("cuCtxSynchronize", api.CtxSynchronize());

  calls.MeasurePeak(rank.rank(), static_cast<unsigned>(rank.rank()));
  rank.Barrier();  // every rank measured with all buffers alive

  // Teardown without a barrier: a peer may free its buffers while this rank still has them
  // open, and the peers' shared buffers are never closed (left to process exit), as in vLLM.
  for (const auto& [key, p] : opened) calls.Note("cuIpcCloseMemHandle", api.IpcCloseMemHandle(p));
  calls.Note("cuMemFree", api.MemFree(meta[static_cast<size_t>(rank.rank())]));
  calls.Note("cuMemFree", api.MemFree(buffers[static_cast<size_t>(rank.rank())]));
  calls.Note("cuMemFree", api.MemFree(rank_data));
  calls.Note("cuMemFree", api.MemFree(segment));
  return calls.ok() ? 0 : 1;
}

}  // namespace tessera::replay
