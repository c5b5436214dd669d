// hook_replay: replays how a real program shares GPU memory between its processes, call for call
// as its sources make them (each scenario's file says which), on whatever libcuda.so.1 is loaded:
// simgpu bare, or simgpu under libtessera-cuda.so (replay_test.cc runs both and compares).
//
//   hook_replay <scenario> <ranks> <route>
//     scenario: vllm-custom-allreduce | torch-tensor-ipc | torch-expandable-segments |
//               nccl-p2p-cumem | nccl-nvls | null-arguments
//     route: direct | runtime
//
// Prints one JSON array, each rank's calls with their results and the memory it saw at its peak
// (replay_calls.h). Exits 0 when every rank exited 0, 77 when this machine cannot run the scenario
// (it says why on stderr), 1 otherwise, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

bool UseDevice(Calls& calls, int ordinal) {
  const hooktest::Api& api = calls.api();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  return calls.Note("cuInit", api.Init(0)) == CUDA_SUCCESS &&
         calls.Note("cuDeviceGet", api.DeviceGet(&dev, ordinal)) == CUDA_SUCCESS &&
         calls.Note("cuDevicePrimaryCtxRetain", api.PrimaryCtxRetain(&ctx, dev)) == CUDA_SUCCESS &&
         calls.Note("cuCtxSetCurrent", api.CtxSetCurrent(ctx)) == CUDA_SUCCESS;
}

}  // namespace tessera::replay

int main(int argc, char** argv) {
  using namespace tessera::replay;
  if (argc != 4) {
    std::fprintf(stderr, "usage: hook_replay <scenario> <ranks> <route>\n");
    return 2;
  }
  std::string scenario = argv[1], route = argv[3];
  int ranks = std::atoi(argv[2]);
  int (*body)(Rank&, Calls&) = nullptr;
  if (scenario == "vllm-custom-allreduce") body = VllmCustomAllReduce;
  if (scenario == "torch-tensor-ipc") body = TorchTensorIpc;
  if (scenario == "nccl-p2p-cumem") body = NcclP2pCuMem;
  if (scenario == "torch-expandable-segments") body = TorchExpandableSegments;
  if (scenario == "null-arguments") body = NullArguments;
  if (scenario == "nccl-nvls") body = NcclNvls;
  if (scenario == "nccl-host-cumem") body = NcclHostCuMem;
  if (scenario == "vulkan-interop") body = VulkanInterop;
  if (body == nullptr || ranks < 1 || ranks > 8) {
    std::fprintf(stderr, "hook_replay: unknown scenario %s or bad rank count %s\n", argv[1],
                 argv[2]);
    return 2;
  }
  std::vector<RankResult> results = RunRanks(ranks, [&](Rank& rank) {
    tessera::hooktest::Api api;
    std::string missing = tessera::hooktest::LoadApi(route, &api);
    if (!missing.empty()) {
      std::fprintf(stderr, "rank %d: %s\n", rank.rank(), missing.c_str());
      return 1;
    }
    Calls calls(api);
    int rc = body(rank, calls);
    rank.Report(calls.Result(rank.rank()).dump());
    return rc;
  });
  nlohmann::json out = nlohmann::json::array();
  bool ok = true, cannot_run = false;
  for (const RankResult& r : results) {
    ok = ok && r.exit_code == 0;
    cannot_run = cannot_run || r.exit_code == kCannotRun;
    nlohmann::json one = nlohmann::json::parse(r.result, nullptr, false);
    if (one.is_discarded()) one = nlohmann::json::object();
    one["exit_code"] = r.exit_code;
    out.push_back(one);
  }
  std::printf("%s\n", out.dump().c_str());
  return cannot_run ? kCannotRun : ok ? 0 : 1;
}
