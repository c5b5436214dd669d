#include "scheduler/dra_shares.h"

#include <gtest/gtest.h>

#include "scheduler/inspect.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

// A ResourceClaim allocated on `results` ({driver, pool, device, consumedCapacity}), reserved
// for `pods`.
json Claim(const std::string& name, json results, std::vector<std::string> pods = {}) {
  json reserved = json::array();
  for (const std::string& p : pods) {
    reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}}},
          {"status",
           {{"allocation", {{"devices", {{"results", std::move(results)}}}}},
            {"reservedFor", reserved}}}};
}

json Result(const std::string& pool, const std::string& device, json consumed,
            const std::string& driver = "gpu.tessera.io") {
  json r = {{"request", "gpu"}, {"driver", driver}, {"pool", pool}, {"device", device}};
  if (!consumed.is_null()) r["consumedCapacity"] = consumed;
  return r;
}

TEST(DraShares, EachResultOfTesserasDriverIsAShareWithItsConsumedCapacity) {
  std::vector<std::string> warnings;
  json claim = Claim("shared",
                     {Result("node-a", "gpu-1", {{"memory", "2Gi"}, {"cores", "30"}}),
                      Result("node-a", "gpu-2", nullptr),
                      Result("node-a", "nic-0", {{"memory", "1Gi"}}, "other.example.com")},
                     {"reader-a", "reader-b"});
  std::vector<DraShare> shares = DraSharesOf(claim, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0], (DraShare{.claim = "team-a/shared",
                                 .uid = "uid-shared",
                                 .node = "node-a",
                                 .device = "gpu-1",
                                 .gpu_index = 1,
                                 .memory_mib = 2048,
                                 .cores = 30,
                                 .pods = {"team-a/reader-a", "team-a/reader-b"}}));
  EXPECT_EQ(shares[1].device, "gpu-2");
  EXPECT_FALSE(shares[1].memory_mib.has_value());  // the whole GPU's memory
  EXPECT_EQ(shares[1].cores, 0);

  // An unallocated claim has none.
  json pending = Claim("pending", json::array());
  pending["status"].erase("allocation");
  EXPECT_TRUE(DraSharesOf(pending, warnings).empty());
}

TEST(DraShares, ACapacityThatCannotBeReadIsAWarningNamingClaimAndDevice) {
  std::vector<std::string> warnings;
  std::vector<DraShare> shares =
      DraSharesOf(Claim("bad", {Result("n", "gpu-0", {{"cores", "150"}}),
                                Result("n", "gpu-1", {{"memory", "lots"}}),
                                Result("n", "odd", {{"memory", "1Gi"}})}),
                  warnings);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].device, "odd");
  EXPECT_FALSE(shares[0].gpu_index.has_value());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "claim team-a/bad: device gpu-0: consumedCapacity cores: 150 is over 100");
  EXPECT_EQ(warnings[1].rfind("claim team-a/bad: device gpu-1: consumedCapacity memory: ", 0), 0u)
      << warnings[1];
}

// Fields of the wrong type (which the API server's validation would refuse) are skipped, never
// thrown on: the claim informer's thread must go on.
TEST(DraShares, FieldsOfTheWrongTypeAreSkipped) {
  std::vector<std::string> warnings;
  json odd = Claim("odd", {{{"driver", 7}, {"pool", "n"}, {"device", "gpu-0"}},
                           {{"driver", "gpu.tessera.io"}, {"pool", 1}, {"device", true}}});
  odd["status"]["reservedFor"] = json::array({{{"resource", 3}}, "x"});
  std::vector<DraShare> shares = DraSharesOf(odd, warnings);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].node, "");
  EXPECT_TRUE(shares[0].pods.empty());
  json broken = Claim("broken", json::array());
  broken["status"] = "allocated";
  EXPECT_TRUE(DraSharesOf(broken, warnings).empty());
}

TEST(DraShares, TheTableFollowsTheClaimsEvents) {
  DraShareTable table;
  json claim = Claim("c", {Result("node-a", "gpu-0", {{"memory", "1Gi"}})}, {"p"});
  table.OnClaim(EventType::kAdded, claim);
  ASSERT_EQ(table.Snapshot().shares.size(), 1u);
  // Deallocated (its pods are gone): no share.
  json released = claim;
  released["status"].erase("allocation");
  table.OnClaim(EventType::kModified, released);
  EXPECT_TRUE(table.Snapshot().shares.empty());
  table.OnClaim(EventType::kModified, claim);
  table.OnClaim(EventType::kDeleted, claim);
  EXPECT_TRUE(table.Snapshot().shares.empty());
  table.OnClaim(EventType::kAdded, Claim("bad", {Result("n", "gpu-0", {{"cores", "101"}})}));
  EXPECT_EQ(table.Snapshot().warnings.size(), 1u);
}

// /inspect: each share with its GPU's UUID, and the GPU's virtual memory for a whole-memory share.
TEST(DraShares, InspectShowsThemBesideTheGpusWithTheirUuids) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(
      state.OnNode(EventType::kAdded, testing::MakeUniformNode("node-a", 2, "A100", 40960)).ok());
  DraShareTable table;
  table.OnClaim(
      EventType::kAdded,
      Claim("c", {Result("node-a", "gpu-1", nullptr), Result("gone", "gpu-0", {{"memory", "1Gi"}})},
            {"p"}));
  json inspect = InspectJson(state.Snapshot(), {}, {.dra = table.Snapshot()});
  EXPECT_EQ(inspect["draShares"], json::parse(R"j([
    {"claim":"team-a/c","uid":"uid-c","node":"node-a","device":"gpu-1","gpuIndex":1,
     "gpuUuid":"node-a-gpu1","memoryMiB":40960,"wholeMemory":true,"cores":0,
     "pods":["team-a/p"],"dra":true},
    {"claim":"team-a/c","uid":"uid-c","node":"gone","device":"gpu-0","gpuIndex":0,
     "memoryMiB":1024,"wholeMemory":false,"cores":0,"pods":["team-a/p"],"dra":true}])j"));
  EXPECT_EQ(inspect["warnings"], json::array());
  // The scheduler's own accounting does not count them.
  EXPECT_EQ(inspect["nodes"][0]["gpus"][1]["usedMiB"], 0);
}

}  // namespace
}  // namespace tessera::scheduler
