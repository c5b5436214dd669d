// QuotaLedger (quota_ledger.h): what counts against a namespace's quotas as watch events arrive
// (finished pods, deleted objects, other namespaces, claims, several quotas), and what Admit
// remembers between its answer and the watch.
#include "scheduler/quota_ledger.h"

#include <gtest/gtest.h>

#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeUniformNode;

constexpr int64_t kGiB = int64_t{1} << 30;

json Quota(const std::string& ns, const std::string& name, json hard) {
  return {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"hard", std::move(hard)}}}};
}

json PodIn(const std::string& ns, const std::string& name, const testing::Resources& limits,
           const std::string& phase = "Running") {
  json pod = MakePod(name, limits);
  pod["metadata"]["namespace"] = ns;
  pod["status"]["phase"] = phase;
  return pod;
}

json ClaimIn(const std::string& ns, const std::string& name, const std::string& memory) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpu"},
                 {"exactly",
                  {{"deviceClassName", "gpu.tessera.io"},
                   {"capacity", {{"requests", {{"memory", memory}, {"cores", "10"}}}}}}}}}}}}}}};
}

PodAsk Memory(int64_t bytes, int64_t cores = 10) {
  return {.app = {bytes, 0, cores}};
}

class QuotaLedgerTest : public ::testing::Test {
 protected:
  QuotaLedgerTest() : ledger(DialectConfig{}, std::chrono::seconds(60), [this] { return now; }) {
    ledger.OnNode(EventType::kAdded, MakeUniformNode("n1", 4, "A100", 81920));
    ledger.OnQuota(EventType::kAdded,
                   Quota("ml", "gpu-quota", {{"requests.tessera.io/gpu-memory", "10Gi"}}));
  }

  std::chrono::steady_clock::time_point now{};
  QuotaLedger ledger;
};

TEST_F(QuotaLedgerTest, CountsLivePodsAndClaimsOfTheNamespaceOnly) {
  ledger.OnPod(EventType::kAdded, PodIn("ml", "vgpu", {{"nvidia.com/gpumem", "2048"}}));
  ledger.OnPod(EventType::kAdded, PodIn("ml", "vcuda", {{"tencent.com/vcuda-memory", "4"}}));
  ledger.OnPod(EventType::kAdded,
               PodIn("ml", "done", {{"nvidia.com/gpumem", "4096"}}, "Succeeded"));
  ledger.OnPod(EventType::kAdded, PodIn("ml", "failed", {{"aliyun.com/gpu-mem", "4"}}, "Failed"));
  ledger.OnPod(EventType::kAdded, PodIn("other", "big", {{"nvidia.com/gpumem", "40960"}}));
  ledger.OnPod(EventType::kAdded, PodIn("ml", "cpu", {{"cpu", "2"}}));
  ledger.OnClaim(EventType::kAdded, ClaimIn("ml", "c", "3Gi"));
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 2 * kGiB + kGiB + 3 * kGiB);
  EXPECT_EQ(ledger.Used("ml").cores, 100 + 100 + 10);

  // A pod that ends, or is deleted, frees its share; so does a deleted claim.
  ledger.OnPod(EventType::kModified,
               PodIn("ml", "vgpu", {{"nvidia.com/gpumem", "2048"}}, "Failed"));
  ledger.OnClaim(EventType::kDeleted, ClaimIn("ml", "c", "3Gi"));
  ledger.OnPod(EventType::kDeleted, PodIn("ml", "vcuda", {{"tencent.com/vcuda-memory", "4"}}));
  EXPECT_EQ(ledger.Used("ml"), (GpuUsage{0, 0}));
}

TEST_F(QuotaLedgerTest, RefusesWhatPassesTheLimitAndNothingElsewhere) {
  ledger.OnPod(EventType::kAdded, PodIn("ml", "a", {{"nvidia.com/gpumem", "6144"}}));
  EXPECT_EQ(ledger.Admit("ml", "uid-b", Memory(4 * kGiB), "b"), "") << "exactly the limit";
  std::string refused = ledger.Admit("ml", "uid-c", Memory(1 * kGiB), "c");
  EXPECT_EQ(refused,
            "namespace ml: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 10 GiB used, 1 GiB "
            "asked (c), 0 GiB left");
  EXPECT_EQ(ledger.Admit("other", "uid-d", Memory(100 * kGiB), "d"), "")
      << "a namespace without a GPU quota is never refused";
}

TEST_F(QuotaLedgerTest, AdmittedCountsUntilTheWatchShowsItOnceOrItExpires) {
  EXPECT_EQ(ledger.Admit("ml", "uid-a", Memory(6 * kGiB), "a"), "");
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 6 * kGiB) << "admitted, not seen yet";
  EXPECT_NE(ledger.Admit("ml", "uid-b", Memory(6 * kGiB), "b"), "")
      << "two pods admitted a moment apart must not both pass";
  // The watch shows it: counted once.
  ledger.OnPod(EventType::kAdded, PodIn("ml", "a", {{"nvidia.com/gpumem", "6144"}}));
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 6 * kGiB);
  // A review retried for the same object counts once too.
  EXPECT_EQ(ledger.Admit("ml", "uid-x", Memory(2 * kGiB), "x"), "");
  EXPECT_EQ(ledger.Admit("ml", "uid-x", Memory(2 * kGiB), "x"), "");
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 8 * kGiB);
  // An admitted object the API server never stored stops counting after the TTL.
  now += std::chrono::seconds(61);
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 6 * kGiB);
  // A dry run (record false) counts nothing.
  EXPECT_EQ(ledger.Admit("ml", "uid-y", Memory(4 * kGiB), "y", /*record=*/false), "");
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 6 * kGiB);
}

// An API server that validates before it sets the UID: the admission is keyed by name, and the
// watch, which shows the UID, still finds it.
TEST_F(QuotaLedgerTest, AnAdmissionWithoutUidIsMatchedByName) {
  json pod = PodIn("ml", "a", {{"nvidia.com/gpumem", "6144"}});
  json reviewed = pod;
  reviewed["metadata"].erase("uid");
  EXPECT_EQ(ledger.Admit("ml", QuotaKeyOf(reviewed), Memory(6 * kGiB), "a"), "");
  EXPECT_EQ(QuotaKeyOf(reviewed), "name:a");
  ledger.OnPod(EventType::kAdded, pod);
  EXPECT_EQ(ledger.Used("ml").memory_bytes, 6 * kGiB) << "counted once";
}

TEST_F(QuotaLedgerTest, EveryQuotaOfTheNamespaceApplies) {
  ledger.OnQuota(EventType::kAdded,
                 Quota("ml", "compute", {{"requests.tessera.io/gpu-cores", "150"}}));
  ledger.OnPod(EventType::kAdded,
               PodIn("ml", "a", {{"nvidia.com/gpumem", "1024"}, {"nvidia.com/gpucores", "100"}}));
  std::string refused = ledger.Admit("ml", "uid-b", Memory(1 * kGiB, 60), "b");
  EXPECT_EQ(refused,
            "namespace ml: GPU compute quota 150% of a GPU (ResourceQuota compute): 100% of a GPU "
            "used, 60% of a GPU asked (b), 50% of a GPU left");
  EXPECT_EQ(ledger.Admit("ml", "uid-c", Memory(1 * kGiB, 50), "c"), "");
  EXPECT_EQ(ledger.Limits("ml").size(), 2u);
  // A quota deleted, or edited to drop Tessera's names, no longer applies.
  ledger.OnQuota(EventType::kDeleted, Quota("ml", "compute", json::object()));
  ledger.OnQuota(EventType::kModified, Quota("ml", "gpu-quota", {{"requests.cpu", "2"}}));
  EXPECT_TRUE(ledger.Limits("ml").empty());
  EXPECT_EQ(ledger.Admit("ml", "uid-d", Memory(100 * kGiB, 100), "d"), "");
}

// What /inspect and /metrics show: each namespace with a quota, its quotas by name and its usage
// (what was admitted and not watched yet included); namespaces without a quota are left out.
TEST_F(QuotaLedgerTest, QuotasListsOnlyNamespacesWithAQuotaAndWhatTheyUse) {
  ledger.OnQuota(EventType::kAdded,
                 Quota("ml", "compute", {{"requests.tessera.io/gpu-cores", "150"}}));
  ledger.OnQuota(EventType::kAdded, Quota("batch", "gpu",
                                          {{"requests.tessera.io/gpu-memory", "1Ti"},
                                           {"requests.tessera.io/gpu-cores", "800"}}));
  ledger.OnPod(EventType::kAdded, PodIn("ml", "a", {{"nvidia.com/gpumem", "2048"}}));
  ledger.OnPod(EventType::kAdded, PodIn("free", "big", {{"nvidia.com/gpumem", "40960"}}));
  ASSERT_EQ(ledger.Admit("ml", "uid-b", Memory(1 * kGiB, 30), "b"), "");
  std::vector<NamespaceQuotas> quotas = ledger.Quotas();
  ASSERT_EQ(quotas.size(), 2u);
  EXPECT_EQ(quotas[0],
            (NamespaceQuotas{"batch", {{"gpu", int64_t{1} << 40, int64_t{800}}}, GpuUsage{0, 0}}));
  EXPECT_EQ(quotas[1], (NamespaceQuotas{"ml",
                                        {{"compute", std::nullopt, int64_t{150}},
                                         {"gpu-quota", 10 * kGiB, std::nullopt}},
                                        GpuUsage{3 * kGiB, 130}}));
  // A namespace whose last quota goes is no longer listed, though its pods still run.
  ledger.OnQuota(EventType::kDeleted, Quota("batch", "gpu", json::object()));
  quotas = ledger.Quotas();
  ASSERT_EQ(quotas.size(), 1u);
  EXPECT_EQ(quotas[0].ns, "ml");
}

TEST_F(QuotaLedgerTest, WholeGpusCountAtTheLargestGpu) {
  ledger.OnNode(EventType::kAdded, MakeUniformNode("n2", 2, "H200", 143360));
  EXPECT_EQ(ledger.LargestGpuMiB(), 143360u);
  EXPECT_EQ(ledger.MaxGpusPerNode(), 4);
  ledger.OnPod(EventType::kAdded, PodIn("other", "whole", {{"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(ledger.Used("other").memory_bytes, 140 * kGiB);
  // The large node leaves: the same pod counts at the GPUs that remain.
  ledger.OnNode(EventType::kDeleted, MakeUniformNode("n2", 2, "H200", 143360));
  EXPECT_EQ(ledger.Used("other").memory_bytes, 80 * kGiB);
}

TEST(QuotaLedgerNoNodes, AWholeGpuAskIsRefusedUnderAMemoryQuotaUntilAGpuNodeIsKnown) {
  QuotaLedger ledger{DialectConfig{}};
  ledger.OnQuota(EventType::kAdded,
                 Quota("ml", "q", {{"requests.tessera.io/gpu-memory", "100Gi"}}));
  std::string refused = ledger.Admit("ml", "uid-a", {.app = {0, 100, 100}}, "a");
  EXPECT_NE(refused.find("cannot be counted before the scheduler knows a GPU node"),
            std::string::npos)
      << refused;
  EXPECT_EQ(ledger.Admit("ml", "uid-b", {.app = {kGiB, 0, 100}}, "b"), "")
      << "memory in bytes needs no GPU to count";
}

}  // namespace
}  // namespace tessera::scheduler
