#include "node/dra/claim_grant.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/test_support.h"

namespace tessera::node::dra {
namespace {

using nlohmann::json;
using tessera::node::testing::TestGpus;
using ::testing::HasSubstr;

const ClaimRef kRef{"default", "c", "uid-c"};

json Alloc(const std::string& device, json capacity = nullptr, const std::string& pool = "n1",
           const std::string& request = "gpu-0") {
  json r = {{"request", request}, {"driver", kDriverName}, {"pool", pool}, {"device", device}};
  if (!capacity.is_null()) {
    r["shareID"] = "share-" + device + "-" + request;
    r["consumedCapacity"] = capacity;
  }
  return r;
}

json Claim(const std::vector<json>& results, const std::string& uid = "uid-c") {
  return {{"metadata", {{"name", "c"}, {"namespace", "default"}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", json(results)}}}}}}}};
}

TEST(ClaimGrantTest, SharedDeviceGivesConsumedMemoryAndCores) {
  auto g = GrantOfClaim(Claim({Alloc("gpu-1", {{"memory", "8Gi"}, {"cores", "30"}})}), kRef, "n1",
                        TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->grant.devices.size(), 1u);
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-1", 8192, 30, 0}));
  ASSERT_EQ(g->devices.size(), 1u);
  EXPECT_EQ(g->devices[0],
            (PreparedDevice{{"gpu-0"}, "n1", "gpu-1", std::string("share-gpu-1-gpu-0")}));
}

// Quantities as Kubernetes writes them: decimal suffixes are powers of 1000 (8G is 8e9 bytes, not
// 8 GiB), and 1.5Gi is a whole number of bytes.
TEST(ClaimGrantTest, ConsumedCapacityIsReadAsAKubernetesQuantity) {
  auto g = GrantOfClaim(
      Claim({Alloc("gpu-0", {{"memory", "8G"}}), Alloc("gpu-1", {{"memory", "1.5Gi"}})}), kRef,
      "n1", TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->grant.devices.size(), 2u);
  EXPECT_EQ(g->grant.devices[0].memory_mib, 8'000'000'000u / (1024 * 1024));
  EXPECT_EQ(g->grant.devices[1].memory_mib, 1536u);
}

// Issue 33: on a GPU whose memory is scaled the slice's capacity is the virtual memory, so a
// claim may consume more than the physical memory, up to the virtual.
TEST(ClaimGrantTest, ScaledGpusGrantUpToTheirVirtualMemory) {
  std::vector<GpuInfo> gpus = TestGpus(2);
  for (GpuInfo& g : gpus) g.memory_scaling = 2;
  auto g = GrantOfClaim(Claim({Alloc("gpu-1", {{"memory", "100Gi"}, {"cores", "30"}})}), kRef, "n1",
                        gpus);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-1", 102400, 30, 0}));
  auto over = GrantOfClaim(Claim({Alloc("gpu-1", {{"memory", "163841Mi"}})}), kRef, "n1", gpus);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(),
              HasSubstr("is given 163841 MiB, the GPU has 163840 MiB (81920 MiB x 2)"));
}

TEST(ClaimGrantTest, ExclusiveAllocationGetsTheWholeGpu) {
  auto g = GrantOfClaim(Claim({Alloc("gpu-0")}), kRef, "n1", TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-0", 0, 0, 0}));
  EXPECT_EQ(g->devices[0].share_id, std::nullopt);
}

TEST(ClaimGrantTest, TwoRequestsOnOneGpuAddUpAndOtherDriversAreSkipped) {
  json other = {{"request", "nic"}, {"driver", "net.example.com"}, {"pool", "x"}, {"device", "d"}};
  auto g = GrantOfClaim(Claim({Alloc("gpu-0", {{"memory", "1Gi"}, {"cores", 20}}, "n1", "a"), other,
                               Alloc("gpu-0", {{"memory", "512Mi"}, {"cores", "90"}}, "n1", "b")}),
                        kRef, "n1", TestGpus(1));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->grant.devices.size(), 1u);
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-0", 1536, 100, 0}));
  EXPECT_EQ(g->devices.size(), 2u);
}

TEST(ClaimGrantTest, ASubrequestIsAnsweredWithItsBaseRequest) {
  auto g = GrantOfClaim(Claim({Alloc("gpu-0", {{"memory", "1Gi"}}, "n1", "gpu-0/small")}), kRef,
                        "n1", TestGpus(1));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->devices[0].requests, std::vector<std::string>{"gpu-0"});
}

TEST(ClaimGrantTest, MemoryWithoutCoresHasNoComputeLimit) {
  auto g =
      GrantOfClaim(Claim({Alloc("gpu-0", {{"memory", "2147483648"}})}), kRef, "n1", TestGpus(1));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-0", 2048, 0, 0}));
}

// The claim's (or its class's) GpuConfig for this driver.
json WithConfig(json claim, const std::vector<json>& entries) {
  claim["status"]["allocation"]["devices"]["config"] = entries;
  return claim;
}
json GpuConfig(const json& fields, const json& requests = nullptr,
               const std::string& driver = kDriverName) {
  json parameters = {{"apiVersion", "gpu.tessera.io/v1"}, {"kind", "GpuConfig"}};
  parameters.update(fields);
  json entry = {{"source", "FromClaim"},
                {"opaque", {{"driver", driver}, {"parameters", parameters}}}};
  if (!requests.is_null()) entry["requests"] = requests;
  return entry;
}

TEST(ClaimGrantTest, GpuConfigMakesTheClaimElastic) {
  json claim = Claim({Alloc("gpu-1", {{"memory", "8Gi"}, {"cores", "30"}})});
  auto g =
      GrantOfClaim(WithConfig(claim, {GpuConfig({{"computeMode", "elastic"}, {"coresLimit", 60}})}),
                   kRef, "n1", TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.mode, "elastic");
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-1", 8192, 30, 60}));
  // Without coresLimit: elastic up to the whole GPU. A later entry (the claim's, after its
  // class's) wins; another driver's entry is not ours.
  g = GrantOfClaim(WithConfig(claim, {GpuConfig({{"computeMode", "elastic"}, {"coresLimit", 60}}),
                                      GpuConfig({{"computeMode", "elastic"}}, json{"gpu-0"}),
                                      GpuConfig({{"computeMode", "hard"}}, nullptr, "other.io")}),
                   kRef, "n1", TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.mode, "elastic");
  EXPECT_EQ(g->grant.devices[0].cores_limit, 0) << "the later entry, whole, says no coresLimit";
  g = GrantOfClaim(WithConfig(claim, {GpuConfig({{"computeMode", "hard"}})}), kRef, "n1",
                   TestGpus(2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->grant.mode, "hard");
  EXPECT_EQ(GrantOfClaim(claim, kRef, "n1", TestGpus(2))->grant.mode, "hard") << "the default";
}

TEST(ClaimGrantTest, GpuConfigRefusalsSayWhatIsWrong) {
  json claim = Claim({Alloc("gpu-1", {{"memory", "8Gi"}, {"cores", "30"}}),
                      Alloc("gpu-0", {{"memory", "8Gi"}, {"cores", "30"}}, "n1", "gpu-1")});
  json bad_kind = GpuConfig(json::object());
  bad_kind["opaque"]["parameters"]["kind"] = "Other";
  struct Case {
    json entry;
    std::string message;
  } cases[] = {
      {GpuConfig({{"computeMode", "soft"}}),
       "computeMode \"soft\": expected \"hard\" or \"elastic\""},
      {GpuConfig({{"computeMode", "elastic"}, {"coresLimit", 101}}),
       "coresLimit 101: expected a whole percent"},
      {GpuConfig({{"coresLimit", 50}}), "coresLimit applies to computeMode elastic only"},
      {GpuConfig({{"memory", "1Gi"}}), "unknown field \"memory\""},
      {bad_kind, "must have apiVersion gpu.tessera.io/v1 and kind GpuConfig"},
      {GpuConfig({{"computeMode", "elastic"}}, json{"gpu-0"}),
       "config[0] applies to some of the claim's requests only"},
  };
  for (const Case& c : cases) {
    auto g = GrantOfClaim(WithConfig(claim, {c.entry}), kRef, "n1", TestGpus(2));
    ASSERT_FALSE(g.ok()) << c.message;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(g.status().message(), HasSubstr(c.message));
    EXPECT_THAT(g.status().message(), HasSubstr("ResourceClaim default/c"));
  }
  auto whole =
      GrantOfClaim(WithConfig(Claim({Alloc("gpu-0")}), {GpuConfig({{"computeMode", "elastic"}})}),
                   kRef, "n1", TestGpus(2));
  ASSERT_FALSE(whole.ok());
  EXPECT_THAT(whole.status().message(),
              HasSubstr("computeMode elastic needs a share of the GPU's cores"));
}

// Monitoring and management pods claim GPUs with adminAccess, beside the tenants that hold them:
// they get the GPUs whole, without limits, even one that is unhealthy (what they may be watching).
TEST(ClaimGrantTest, AdminAccessGetsTheGpusWithoutLimits) {
  std::vector<GpuInfo> gpus = TestGpus(2);
  gpus[1].healthy = false;
  json shared = Alloc("gpu-0", {{"memory", "8Gi"}, {"cores", "30"}}, "n1", "monitor");
  json sick = Alloc("gpu-1", nullptr, "n1", "monitor");
  shared["adminAccess"] = sick["adminAccess"] = true;
  auto g = GrantOfClaim(Claim({shared, sick}), kRef, "n1", gpus);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(g->admin_access);
  ASSERT_EQ(g->grant.devices.size(), 2u);
  EXPECT_EQ(g->grant.devices[0], (GrantDevice{"GPU-0", 0, 0, 0}));
  EXPECT_EQ(g->grant.devices[1], (GrantDevice{"GPU-1", 0, 0, 0}));
  EXPECT_EQ(g->devices.size(), 2u);

  auto plain = GrantOfClaim(Claim({Alloc("gpu-0")}), kRef, "n1", gpus);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->admin_access);
}

TEST(ClaimGrantTest, AdminAccessAndLimitsInOneClaimAreRefused) {
  json monitor = Alloc("gpu-0", nullptr, "n1", "monitor");
  monitor["adminAccess"] = true;
  json work = Alloc("gpu-1", {{"memory", "8Gi"}}, "n1", "work");
  work["adminAccess"] = false;
  auto g = GrantOfClaim(Claim({monitor, work}), kRef, "n1", TestGpus(2));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(g.status().message(),
              HasSubstr("ResourceClaim default/c: requests monitor have adminAccess and work do "
                        "not"));
  EXPECT_THAT(g.status().message(), HasSubstr("use two claims"));
}

TEST(ClaimGrantTest, RefusalsSayWhatIsWrong) {
  std::vector<GpuInfo> sick = TestGpus(2);
  sick[1].healthy = false;
  std::vector<GpuInfo> in_mig = TestGpus(2);
  in_mig[1].mig.capable = in_mig[1].mig.enabled = true;
  struct Case {
    json claim;
    std::vector<GpuInfo> gpus;
    StatusCode code;
    std::string message;
  } cases[] = {
      {Claim({Alloc("gpu-0")}, "uid-other"), TestGpus(2), StatusCode::kFailedPrecondition,
       "has uid uid-other, kubelet asked for uid-c"},
      {{{"metadata", {{"uid", "uid-c"}}}},
       TestGpus(2),
       StatusCode::kFailedPrecondition,
       "is not allocated"},
      {Claim({}), TestGpus(2), StatusCode::kFailedPrecondition,
       "has no device of driver gpu.tessera.io"},
      {Claim({Alloc("gpu-0", nullptr, "n2")}), TestGpus(2), StatusCode::kFailedPrecondition,
       "allocated from pool \"n2\", this node's pool is \"n1\""},
      {Claim({Alloc("gpu-7")}), TestGpus(2), StatusCode::kNotFound,
       "device \"gpu-7\" is not on node n1"},
      {Claim({Alloc("gpu-01")}), TestGpus(2), StatusCode::kNotFound, "\"gpu-01\" is not on"},
      {Claim({Alloc("gpu-1")}), sick, StatusCode::kFailedPrecondition,
       "device gpu-1 (GPU-1) is unhealthy"},
      {Claim({Alloc("gpu-1")}), in_mig, StatusCode::kFailedPrecondition,
       "device gpu-1 (GPU-1) is in MIG mode: it is no CUDA device"},
      {Claim({Alloc("gpu-0", {{"memory", "81921Mi"}})}), TestGpus(2), StatusCode::kInvalidArgument,
       "is given 81921 MiB, the GPU has 81920 MiB"},
      {Claim({Alloc("gpu-0", {{"memory", "1.5"}})}), TestGpus(2), StatusCode::kInvalidArgument,
       "consumedCapacity.memory \"1.5\" is not a whole quantity"},
  };
  for (const Case& c : cases) {
    auto g = GrantOfClaim(c.claim, kRef, "n1", c.gpus);
    ASSERT_FALSE(g.ok()) << c.message;
    EXPECT_EQ(g.status().code(), c.code) << g.status().message();
    EXPECT_THAT(g.status().message(), HasSubstr(c.message));
    EXPECT_THAT(g.status().message(), HasSubstr("ResourceClaim default/c"));
  }
}

}  // namespace
}  // namespace tessera::node::dra
