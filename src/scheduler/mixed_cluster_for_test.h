// The mixed cluster of the end-to-end tests: ten nodes of three GPU models, pods of every dialect
// drawn from a seeded generator, and the check that the decisions on bound pods never exceed a
// GPU. Shared by scheduler_http_test (in-memory API stand-in) and scheduler_e2e_test (fake API
// server). Test-only.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/protocol.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler::testing {

// node-<i>: i % 3 == 0 has 4 x T4 (15360 MiB), 1 has 2 x A100 (40960 MiB), 2 has 8 x RTX 3090
// (24268 MiB). GPU UUIDs are "node-<i>-gpu<j>".
inline std::vector<nlohmann::json> TenMixedNodes() {
  std::vector<nlohmann::json> nodes;
  for (int i = 0; i < 10; ++i) {
    std::string name = "node-" + std::to_string(i);
    nodes.push_back(i % 3 == 0   ? MakeUniformNode(name, 4, "Tesla T4", 15360)
                    : i % 3 == 1 ? MakeUniformNode(name, 2, "A100-SXM4-40GB", 40960)
                                 : MakeUniformNode(name, 8, "SimGPU-3090", 24268));
  }
  return nodes;
}

inline std::vector<std::string> TenMixedNodeNames() {
  std::vector<std::string> names;
  for (const nlohmann::json& n : TenMixedNodes()) names.push_back(n["metadata"]["name"]);
  return names;
}

// The memory of a GPU of TenMixedNodes, by its UUID.
inline uint64_t MixedNodeGpuMib(const std::string& uuid) {
  int node = std::stoi(uuid.substr(uuid.find('-') + 1));
  return node % 3 == 0 ? 15360 : node % 3 == 1 ? 40960 : 24268;
}

// Pod "pod-<i>": vGPU (count, memory, cores), vcuda (shares, now and then a whole GPU, elastic
// limits), gpushare, or a memory percentage with a GPU type selection, in turn.
inline nlohmann::json RandomPod(int i, std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Resources r;
  std::map<std::string, std::string> annotations;
  switch (i % 4) {
    case 0:
      r = {{"nvidia.com/gpu", pick(1, 2)},
           {"nvidia.com/gpumem", pick(1, 8) * 1000},
           {"nvidia.com/gpucores", pick(0, 5) * 10}};
      break;
    case 1:
      r = {{"tencent.com/vcuda-core", pick(0, 9) == 0 ? 100 : pick(1, 9) * 10},
           {"tencent.com/vcuda-memory", pick(4, 40)}};
      if (pick(0, 1)) annotations["tencent.com/vcuda-core-limit"] = "100";
      break;
    case 2:
      r = {{"aliyun.com/gpu-mem", pick(1, 8)}};
      break;
    default:
      r = {{"nvidia.com/gpumem-percentage", pick(1, 4) * 10}};
      if (pick(0, 2) == 0) annotations["nvidia.com/use-gputype"] = "3090";
      break;
  }
  return MakePod("pod-" + std::to_string(i), r, annotations);
}

// Adds up the decisions (tessera.io/allocation) of the bound pods per GPU and checks that no GPU
// holds more memory or compute than it has, and that an exclusive holder is alone.
inline void ExpectNoGpuOverAllocated(const std::vector<nlohmann::json>& pods) {
  struct Use {
    uint64_t mib = 0;
    int cores = 0;
    int pods = 0;
    int exclusive = 0;
  };
  std::map<std::string, Use> use;
  for (const nlohmann::json& pod : pods) {
    if (!pod["spec"].contains("nodeName")) continue;
    Result<Allocation> a =
        ParseAllocation(pod["metadata"]["annotations"][kAllocationAnnotation].get<std::string>());
    ASSERT_TRUE(a.ok()) << pod["metadata"]["name"] << ": " << a.status().ToString();
    for (const GpuCharge& c : ChargesOf(*a)) {
      Use& u = use[c.uuid];
      u.mib += c.memory_mib;
      u.cores += c.cores;
      u.pods += 1;
      u.exclusive += c.exclusive;
    }
  }
  for (const auto& [uuid, u] : use) {
    EXPECT_LE(u.mib, MixedNodeGpuMib(uuid)) << uuid;
    EXPECT_LE(u.cores, 100) << uuid;
    if (u.exclusive > 0) {
      EXPECT_EQ(u.pods, 1) << uuid;
    }
  }
}

}  // namespace tessera::scheduler::testing
