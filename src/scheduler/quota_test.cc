// The accounting of namespace GPU quotas (quota.h): each dialect through the one request model,
// DRA claims, whole GPUs, init containers, the limits of a ResourceQuota and the refusal's text.
#include "scheduler/quota.h"

#include <gtest/gtest.h>

#include "scheduler/dialect.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::Resources;
using testing::TestContainer;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

struct PodCase {
  const char* what;
  std::vector<TestContainer> containers;
  uint64_t largest_gpu_mib;
  GpuUsage want;
};

TEST(QuotaTest, PodsOfEveryDialectCountInBytesAndPercent) {
  const std::vector<PodCase> cases = {
      {"vGPU MiB", {{"main", {{"nvidia.com/gpumem", "6144"}}}}, 81920, {6 * kGiB, 100}},
      {"vGPU MiB and cores on 2 GPUs",
       {{"main",
         {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "30"}}}},
       81920,
       {8 * kGiB, 60}},
      {"vGPU percent of the largest GPU",
       {{"main", {{"nvidia.com/gpumem-percentage", "25"}, {"nvidia.com/gpucores", "50"}}}},
       81920,
       {20 * kGiB, 50}},
      {"vGPU whole GPU (count only)",
       {{"main", {{"nvidia.com/gpu", "1"}}}},
       81920,
       {80 * kGiB, 100}},
      {"vGPU exclusive (cores 100)",
       {{"main", {{"nvidia.com/gpumem", "1024"}, {"nvidia.com/gpucores", "100"}}}},
       81920,
       {1 * kGiB, 100}},
      {"vcuda 24 units of 256 MiB",
       {{"main", {{"tencent.com/vcuda-memory", "24"}}}},
       81920,
       {6 * kGiB, 100}},
      {"vcuda share",
       {{"main", {{"tencent.com/vcuda-core", "40"}, {"tencent.com/vcuda-memory", "8"}}}},
       81920,
       {2 * kGiB, 40}},
      {"vcuda two whole GPUs, memory split",
       {{"main", {{"tencent.com/vcuda-core", "200"}, {"tencent.com/vcuda-memory", "64"}}}},
       81920,
       {16 * kGiB, 200}},
      {"vcuda whole GPU without memory",
       {{"main", {{"tencent.com/vcuda-core", "100"}}}},
       40960,
       {40 * kGiB, 100}},
      {"gpushare GiB", {{"main", {{"aliyun.com/gpu-mem", "3"}}}}, 81920, {3 * kGiB, 100}},
      {"app containers add up",
       {{"a", {{"nvidia.com/gpumem", "1024"}, {"nvidia.com/gpucores", "10"}}},
        {"b", {{"aliyun.com/gpu-mem", "2"}}}},
       81920,
       {3 * kGiB, 110}},
      {"init container's peak against the app's sum",
       {{"init", {{"nvidia.com/gpumem", "8192"}, {"nvidia.com/gpucores", "10"}}, true},
        {"main", {{"nvidia.com/gpumem", "2048"}, {"nvidia.com/gpucores", "30"}}}},
       81920,
       {8 * kGiB, 30}},
      {"no GPU node known: a whole GPU's memory counts nothing yet",
       {{"main", {{"nvidia.com/gpu", "1"}}}},
       0,
       {0, 100}},
      {"no GPU ask", {{"main", {{"cpu", "1"}}}}, 81920, {0, 0}},
  };
  for (const PodCase& c : cases) {
    Result<PodRequest> request = ParsePod(MakePod("p", c.containers), DialectConfig{});
    ASSERT_TRUE(request.ok()) << c.what << ": " << request.status().message();
    GpuUsage got = AskOfRequest(*request).Resolve(c.largest_gpu_mib);
    EXPECT_EQ(got.memory_bytes, c.want.memory_bytes) << c.what;
    EXPECT_EQ(got.cores, c.want.cores) << c.what;
  }
}

// The vGPU pod of 6 GiB and the vcuda pod of 24 units are the same ask in the one unit.
TEST(QuotaTest, SixGiBIsTheSameInEveryDialect) {
  auto memory = [](const Resources& limits) {
    Result<PodRequest> r = ParsePod(MakePod("p", limits), DialectConfig{});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return AskOfRequest(*r).Resolve(81920).memory_bytes;
  };
  EXPECT_EQ(memory({{"nvidia.com/gpumem", "6144"}}), 6 * kGiB);
  EXPECT_EQ(memory({{"tencent.com/vcuda-memory", "24"}}), 6 * kGiB);
  EXPECT_EQ(memory({{"aliyun.com/gpu-mem", "6"}}), 6 * kGiB);
}

json Claim(json requests) {
  return {{"devices", {{"requests", std::move(requests)}}}};
}

json Exactly(const std::string& name, json body) {
  body["deviceClassName"] = "gpu.tessera.io";
  return {{"name", name}, {"exactly", std::move(body)}};
}

TEST(QuotaTest, DraClaimsCountTheirCapacity) {
  struct Case {
    const char* what;
    json spec;
    GpuUsage want;  // at a largest GPU of 80 GiB and 8 GPUs per node
  };
  const std::vector<Case> cases = {
      {"memory and cores",
       Claim(
           {Exactly("gpu", {{"capacity", {{"requests", {{"memory", "8Gi"}, {"cores", "30"}}}}}})}),
       {8 * kGiB, 30}},
      {"count 2",
       Claim({Exactly("gpu", {{"count", 2}, {"capacity", {{"requests", {{"memory", "1Gi"}}}}}})}),
       {2 * kGiB, 200}},
      {"no capacity: the whole GPU", Claim({Exactly("gpu", json::object())}), {80 * kGiB, 100}},
      {"allocationMode All: the largest node's GPUs",
       Claim({Exactly("gpu", {{"allocationMode", "All"}})}),
       {8 * 80 * kGiB, 800}},
      {"admin access counts nothing", Claim({Exactly("gpu", {{"adminAccess", true}})}), {0, 0}},
      {"another driver's class counts nothing",
       Claim({{{"name", "nic"}, {"exactly", {{"deviceClassName", "nic.example.com"}}}}}),
       {0, 0}},
      {"firstAvailable: the largest subrequest",
       Claim({{{"name", "gpu"},
               {"firstAvailable",
                {{{"name", "big"},
                  {"deviceClassName", "gpu.tessera.io"},
                  {"capacity", {{"requests", {{"memory", "20Gi"}, {"cores", "20"}}}}}},
                 {{"name", "small"},
                  {"deviceClassName", "gpu.tessera.io"},
                  {"capacity", {{"requests", {{"memory", "4Gi"}, {"cores", "50"}}}}}}}}}}),
       {20 * kGiB, 50}},
      {"two requests add up",
       Claim({Exactly("a", {{"capacity", {{"requests", {{"memory", "2Gi"}, {"cores", "20"}}}}}}),
              Exactly("b", {{"capacity", {{"requests", {{"memory", "3Gi"}, {"cores", "40"}}}}}})}),
       {5 * kGiB, 60}},
  };
  for (const Case& c : cases) {
    Result<GpuAsk> ask = AskOfClaimSpec(c.spec, 8);
    ASSERT_TRUE(ask.ok()) << c.what << ": " << ask.status().message();
    EXPECT_EQ(ask->Resolve(81920), c.want) << c.what;
  }
}

// Values no GPU has (a claim's count of 2^53, a forged inventory) count as very large, never as
// an overflowed, negative number that would make room under a quota.
TEST(QuotaTest, HostileQuantitiesDoNotOverflow) {
  Result<GpuAsk> ask =
      AskOfClaimSpec(Claim({Exactly("a", {{"count", "9007199254740992"},
                                          {"capacity", {{"requests", {{"memory", "8Pi"}}}}}}),
                            Exactly("b", {{"count", "9007199254740992"},
                                          {"capacity", {{"requests", {{"memory", "8Pi"}}}}}})}),
                     8);
  ASSERT_TRUE(ask.ok()) << ask.status().message();
  EXPECT_GT(ask->Resolve(81920).memory_bytes, 1000 * kGiB);
  GpuAsk whole{.memory_percent = 6400, .cores = 6400};
  EXPECT_GT(whole.Resolve(UINT64_MAX).memory_bytes, 1000 * kGiB);
}

TEST(QuotaTest, ClaimWithABadQuantityIsAnErrorNamingTheRequest) {
  Result<GpuAsk> ask = AskOfClaimSpec(
      Claim({Exactly("gpu", {{"capacity", {{"requests", {{"memory", "-1Gi"}}}}}})}), 8);
  ASSERT_FALSE(ask.ok());
  EXPECT_NE(ask.status().message().find("request gpu: capacity.requests.memory"), std::string::npos)
      << ask.status().message();
}

json Quota(const std::string& name, json hard) {
  return {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"hard", std::move(hard)}}}};
}

TEST(QuotaTest, LimitsOfAResourceQuota) {
  Result<std::optional<QuotaLimits>> both =
      LimitsOfQuota(Quota("gpu-quota", {{"requests.tessera.io/gpu-memory", "10Gi"},
                                        {"requests.tessera.io/gpu-cores", "200"}}));
  ASSERT_TRUE(both.ok()) << both.status().message();
  ASSERT_TRUE(both->has_value());
  EXPECT_EQ(**both, (QuotaLimits{"gpu-quota", 10 * kGiB, 200}));

  Result<std::optional<QuotaLimits>> other = LimitsOfQuota(Quota("cpu", {{"requests.cpu", "4"}}));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value()) << "a quota without Tessera's names is not a GPU quota";

  Result<std::optional<QuotaLimits>> bad =
      LimitsOfQuota(Quota("bad", {{"requests.tessera.io/gpu-cores", "1.5"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.hard.requests.tessera.io/gpu-cores"),
            std::string::npos)
      << bad.status().message();
}

TEST(QuotaTest, DenialSaysUsedAskedAndAllowedInTheLimitsUnits) {
  QuotaLimits limits{"gpu-quota", 10 * kGiB, 200};
  EXPECT_EQ(QuotaDenial("ml", limits, {6 * kGiB, 100}, {6 * kGiB, 50}, "what"),
            "namespace ml: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 6 GiB used, 6 GiB "
            "asked (what), 4 GiB left");
  EXPECT_EQ(QuotaDenial("ml", limits, {1 * kGiB, 150}, {512 * kMiB, 60}, "what"),
            "namespace ml: GPU compute quota 200% of a GPU (ResourceQuota gpu-quota): 150% of a "
            "GPU used, 60% of a GPU asked (what), 50% of a GPU left");
  EXPECT_EQ(QuotaDenial("ml", limits, {4 * kGiB, 100}, {6 * kGiB, 100}, "what"), "")
      << "exactly at the limit fits";
  EXPECT_EQ(QuotaDenial("ml", {"mem-only", 1 * kGiB, std::nullopt}, {0, 900}, {0, 100}, "w"), "")
      << "a quantity the quota does not limit is not checked";
}

TEST(QuotaTest, BytesText) {
  EXPECT_EQ(BytesText(10 * kGiB), "10 GiB");
  EXPECT_EQ(BytesText(1536 * kMiB), "1536 MiB");
  EXPECT_EQ(BytesText(1000), "1000 bytes");
  EXPECT_EQ(BytesText(0), "0 GiB");
}

}  // namespace
}  // namespace tessera::scheduler
