#include "node/dra/claim_cdi_spec.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "node/test_support.h"

namespace tessera::node::dra {
namespace {

using nlohmann::json;
using tessera::node::testing::TestGpus;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Paths(const json& nodes) {
  std::vector<std::string> out;
  for (const json& n : nodes) out.push_back(n["path"]);
  return out;
}

// A prepared claim whose results are `devices` ({device, GPU UUID}), in order.
ClaimGrant Claim(const std::vector<std::pair<std::string, std::string>>& devices) {
  ClaimGrant out;
  for (const auto& [device, uuid] : devices) {
    out.devices.push_back({{"gpu"}, "node-a", device, std::nullopt});
    if (std::none_of(out.grant.devices.begin(), out.grant.devices.end(),
                     [&](const GrantDevice& d) { return d.uuid == uuid; })) {
      out.grant.devices.push_back({uuid, 1024, 0});
    }
  }
  return out;
}

json Spec(const ClaimGrant& claim, const std::string& root = "/",
          const std::vector<MountSpec>& mounts = {}) {
  Result<std::string> text = ClaimCdiSpecText("uid-1", claim, TestGpus(4), root, mounts);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? json::parse(*text) : json();
}

TEST(ClaimCdiSpec, EachGpuIsADeviceWithItsOwnNodeAndTheRestIsTheSpecs) {
  ClaimGrant claim = Claim({{"gpu-2", "GPU-2"}, {"gpu-0", "GPU-0"}});
  std::vector<MountSpec> mounts = {{"/var/run/tessera", "/state/allocations/uid-1", true},
                                   {"/var/run/tessera-region", "/state/regions/uid-1", false}};
  json spec = Spec(claim, "/", mounts);
  EXPECT_EQ(spec["kind"], "tessera.io/claim");
  ASSERT_EQ(spec["devices"].size(), 3u);
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-gpu-2");
  EXPECT_THAT(Paths(spec["devices"][0]["containerEdits"]["deviceNodes"]),
              ElementsAre("/dev/nvidia2"));
  EXPECT_EQ(spec["devices"][1]["name"], "uid-1-gpu-0");
  EXPECT_THAT(Paths(spec["devices"][1]["containerEdits"]["deviceNodes"]),
              ElementsAre("/dev/nvidia0"));
  // Nothing in a device but its node: two devices given to one container never contradict.
  for (const json& d : spec["devices"]) EXPECT_EQ(d["containerEdits"].size(), 1u) << d.dump();
  // What an earlier agent answered for every device: all the claim's GPUs.
  EXPECT_EQ(spec["devices"][2]["name"], "uid-1");
  EXPECT_THAT(Paths(spec["devices"][2]["containerEdits"]["deviceNodes"]),
              ElementsAre("/dev/nvidia2", "/dev/nvidia0"));
  // Once per container, whichever of the devices it gets.
  const json& edits = spec["containerEdits"];
  EXPECT_THAT(Paths(edits["deviceNodes"]),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"));
  ASSERT_EQ(edits["mounts"].size(), 2u);
  EXPECT_EQ(edits["mounts"][0]["containerPath"], "/var/run/tessera");
  EXPECT_EQ(edits["mounts"][0]["hostPath"], "/state/allocations/uid-1");
  EXPECT_EQ(edits["mounts"][0]["options"], json({"ro", "nosuid", "nodev", "bind"}));
  EXPECT_EQ(edits["mounts"][1]["options"][0], "rw");
  EXPECT_FALSE(edits.contains("env"));
}

TEST(ClaimCdiSpec, DeviceIdsNameTheClaimAndTheDevice) {
  EXPECT_EQ(ClaimDeviceCdiId("uid-1", "gpu-3"), "tessera.io/claim=uid-1-gpu-3");
}

TEST(ClaimCdiSpec, TwoResultsOnOneGpuAreOneDevice) {
  json spec = Spec(Claim({{"gpu-1", "GPU-1"}, {"gpu-1", "GPU-1"}}));
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-gpu-1");
  EXPECT_EQ(spec["devices"][1]["name"], "uid-1");
}

// kubelet holds the IDs it was answered: a device keeps the name it was prepared with, and holds
// the node of the GPU (by UUID) it was prepared for, even where a reboot renumbered the GPUs.
TEST(ClaimCdiSpec, DevicesKeepTheNamesTheyWerePreparedWith) {
  json spec = Spec(Claim({{"gpu-0", "GPU-3"}}));
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-gpu-0");
  EXPECT_THAT(Paths(spec["devices"][0]["containerEdits"]["deviceNodes"]),
              ElementsAre("/dev/nvidia3"));
}

TEST(ClaimCdiSpec, DevicesAndGpusThatDoNotPairUpAreRefused) {
  ClaimGrant claim = Claim({{"gpu-0", "GPU-0"}, {"gpu-1", "GPU-1"}});
  claim.grant.devices.pop_back();
  Result<std::string> text = ClaimCdiSpecText("uid-1", claim, TestGpus(2), "/", {});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ClaimCdiSpec, NodesUnderADriverRootHaveTheirHostPath) {
  json spec = Spec(Claim({{"gpu-1", "GPU-1"}}), "/run/nvidia/driver/");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"],
            "/run/nvidia/driver/dev/nvidia1");
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"][0]["hostPath"],
            "/run/nvidia/driver/dev/nvidiactl");
  json plain = Spec(Claim({{"gpu-1", "GPU-1"}}));
  EXPECT_FALSE(plain["devices"][0]["containerEdits"]["deviceNodes"][0].contains("hostPath"));
}

TEST(ClaimCdiSpec, WithoutMountsTheSpecHasTheControlNodesOnly) {
  json spec = Spec(Claim({{"gpu-1", "GPU-1"}}));
  EXPECT_FALSE(spec["containerEdits"].contains("mounts"));
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"].size(), 3u);
}

TEST(ClaimCdiSpec, AGpuTheNodeDoesNotHaveIsNotFound) {
  Result<std::string> text =
      ClaimCdiSpecText("uid-1", Claim({{"gpu-9", "GPU-9"}}), TestGpus(2), "/", {});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(text.status().message(), HasSubstr("GPU-9"));
}

}  // namespace
}  // namespace tessera::node::dra
