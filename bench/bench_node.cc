// bench_node: the node agent's Allocate + PreStartContainer latency as kubelet sees it, over the
// device plugin's unix socket, with every pod already in the agent's watch cache (issue 7 asks
// p99 <= 2 ms). Each round: a pod with a decision is bound to the node, the fake kubelet picks
// device IDs, calls Allocate, records the devices and the answer in its device checkpoint (as
// kubelet does) and calls PreStartContainer; the time of the two RPCs is measured (not kubelet's
// checkpoint write between them). The cache holds the last 110 pods (kubelet's default max-pods).
// Prints one JSON line with p50/p99/max and `target_met` (p99 at most 2 ms); the exit code does not
// depend on the target.
//
//   bench_node [--pods N] [--gpus G] [--dir DIR]...   (DIR: where state, CDI and sockets go;
//                                                     default: /dev/shm, then /tmp)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "fakekubelet/device_checkpoint.h"
#include "fakekubelet/registry.h"
#include "log/log.h"
#include "node/allocation/allocator.h"
#include "node/gpu/device_board.h"
#include "node/kubelet/plugin_manager.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

using namespace tessera;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLivePods = 110;

// One run with the state, CDI and sockets under `base` ("" = /tmp); prints its JSON line.
int Measure(int pods, int gpus, const std::string& base) {
  const std::string node_name = "bench-node";
  const std::string resource = "nvidia.com/gpu";
  node::testing::TempDir dir(base);
  fakekubelet::FakeKubeletRegistry registry(dir.path());
  fakekubelet::FakeDeviceCheckpoint checkpoint(dir.path());
  if (!registry.Start().ok() || !checkpoint.Start().ok()) {
    std::cerr << "bench_node: cannot serve the fake kubelet under " << dir.path() << "\n";
    return 1;
  }
  node::MemoryPodStore store(node_name);
  node::KubeletCheckpoint kubelet(checkpoint.Path(), dir.path() + "/state/allocations");
  node::AllocatorOptions opts{.node_name = node_name,
                              .state_dir = dir.path() + "/state",
                              .cdi_dir = dir.path() + "/cdi",
                              .split_count = 1000};
  std::vector<node::ResourceSpec> resources = {{resource, node::ResourceKind::kVgpuSlots}};
  node::AllocationRecorder recorder(store, store);
  node::Allocator allocator(opts, resources, store, recorder, kubelet);
  std::vector<node::GpuInfo> gpu_list = node::testing::TestGpus(gpus);
  allocator.SetGpus(gpu_list);
  node::DeviceBoard board;
  board.Set(gpu_list);
  node::PluginManager plugins(registry.PluginDir(), resources, 1000, allocator, board);
  if (!allocator.Init().ok() || !plugins.Start().ok() ||
      !registry.WaitFor(
          resource, [](const fakekubelet::PluginState& p) { return p.messages > 0; },
          std::chrono::seconds(10))) {
    std::cerr << "bench_node: the device plugin did not register\n";
    return 1;
  }
  auto stub = registry.Plugin(resource);
  std::vector<double> ms;
  for (int i = 0; i < pods; ++i) {
    std::string name = "p" + std::to_string(i);
    int g = i % gpus;
    store.Put(node::testing::MakePod(name, node_name, resource, 1,
                                     {{"GPU-" + std::to_string(g), 1024, 10}}));
    std::string id = std::to_string(g) + "-" + std::to_string(i / gpus);
    auto t0 = Clock::now();
    v1beta1::AllocateRequest areq;
    areq.add_container_requests()->add_devices_ids(id);
    v1beta1::AllocateResponse aresp;
    grpc::ClientContext actx;
    grpc::Status s = (*stub)->Allocate(&actx, areq, &aresp);
    auto t1 = Clock::now();
    // kubelet's own work between the calls is not the agent's: not timed.
    if (s.ok() && aresp.container_responses_size() == 1) {
      checkpoint.Record("default", name, "uid-" + name, "main", resource, {id},
                        aresp.container_responses(0).SerializeAsString());
    }
    v1beta1::PreStartContainerRequest preq;
    preq.add_devices_ids(id);
    v1beta1::PreStartContainerResponse presp;
    grpc::ClientContext pctx;
    auto t2 = Clock::now();
    grpc::Status p = s.ok() ? (*stub)->PreStartContainer(&pctx, preq, &presp) : s;
    auto t3 = Clock::now();
    if (!p.ok()) {
      std::cerr << "bench_node: pod " << name << ": " << p.error_message() << "\n";
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>((t1 - t0) + (t3 - t2)).count());
    // A node holds at most about 110 pods (kubelet's max-pods): keep that many in the cache.
    if (i >= kLivePods) {
      std::string old = "p" + std::to_string(i - kLivePods);
      store.Remove("default", old);
      checkpoint.ForgetPod("default", old);
    }
  }
  plugins.Stop();
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  nlohmann::json out = {{"bench", "node_allocate_prestart"},
                        {"dir", dir.path()},
                        {"pods", pods},
                        {"gpus", gpus},
                        {"p50_ms", pct(0.50)},
                        {"p99_ms", pct(0.99)},
                        {"max_ms", ms.back()},
                        {"target_p99_ms", 2.0},
                        {"target_met", pct(0.99) <= 2.0}};
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 1000, gpus = 8;
  std::vector<std::string> bases;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--pods") == 0) pods = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--gpus") == 0) gpus = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--dir") == 0) bases.push_back(argv[i + 1]);
  }
  log::Configure(log::Level::kWarn, log::Format::kText);
  // Without --dir: on a tmpfs (the agent's own cost) and in /tmp (with this machine's file
  // system, whose share can dwarf the agent's: docs/node-agent.md, Benchmark).
  if (bases.empty()) {
    if (std::filesystem::is_directory("/dev/shm")) bases.push_back("/dev/shm");
    bases.push_back("/tmp");
  }
  for (const std::string& base : bases) {
    if (Measure(pods, gpus, base) != 0) return 1;
  }
  // The target is reported, not enforced through the exit code: a loaded machine misses it
  // without anything being wrong.
  return 0;
}
