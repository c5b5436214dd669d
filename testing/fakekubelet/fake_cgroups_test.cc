// The fake kubelet's cgroups: laid out where the node agent looks (node/containers/cgroup_paths.h),
// with the started process's PID in cgroup.procs, and kubelet's QoS rule.
#include "fakekubelet/fake_cgroups.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fakekubelet/admitter.h"
#include "node/containers/cgroup_paths.h"
#include "node/test_support.h"

namespace tessera::fakekubelet {
namespace {

using nlohmann::json;

json PodWith(json containers) {
  return {{"metadata", {{"name", "p"}, {"uid", "0b1c-2d3e"}}},
          {"spec", {{"containers", containers}}}};
}

json Container(json limits, json requests = json::object()) {
  return {{"name", "c"}, {"resources", {{"limits", limits}, {"requests", requests}}}};
}

TEST(FakeCgroupsTest, QosClassFollowsKubeletsRule) {
  json cpu_mem = {{"cpu", "1"}, {"memory", "1Gi"}};
  EXPECT_EQ(QosClassOf(PodWith({Container(cpu_mem)})), "Guaranteed");
  EXPECT_EQ(QosClassOf(PodWith({Container(cpu_mem, cpu_mem)})), "Guaranteed");
  EXPECT_EQ(QosClassOf(PodWith({Container(cpu_mem, {{"cpu", "500m"}})})), "Burstable");
  EXPECT_EQ(QosClassOf(PodWith({Container({{"cpu", "1"}})})), "Burstable");
  EXPECT_EQ(QosClassOf(PodWith({Container(cpu_mem), Container({{"nvidia.com/gpu", "1"}})})),
            "Burstable");
  EXPECT_EQ(QosClassOf(PodWith({Container({{"nvidia.com/gpu", "1"}})})), "BestEffort");
}

TEST(FakeCgroupsTest, ContainerIdsAreKeptOrMadeUp) {
  json pod = PodWith(json::array());
  pod["status"]["containerStatuses"] = {{{"name", "c"}, {"containerID", "cri-o://abc"}}};
  EXPECT_EQ(ContainerIdFor(pod, "c"), "cri-o://abc");
  std::string made = ContainerIdFor(pod, "other");
  EXPECT_EQ(made.size(), std::string("containerd://").size() + 64);
  EXPECT_NE(made, ContainerIdFor(pod, "other"));
}

TEST(FakeCgroupsTest, TheAgentFindsTheCgroupAndItHoldsTheStartedProcess) {
  node::testing::TempDir dir;
  std::string root = dir.path() + "/cgroup";
  for (const char* qos : {"Guaranteed", "Burstable", "BestEffort"}) {
    std::string id = ContainerIdFor(json::object(), "c");
    auto cgroup = MakeContainerCgroup(root, "0b1c-2d3e", qos, id);
    ASSERT_TRUE(cgroup.ok()) << cgroup.status().ToString();
    auto parsed = node::ParseContainerId(id);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(node::FindContainerCgroup(root, "0b1c-2d3e", node::ParseQosClass(qos), parsed->id),
              *cgroup)
        << qos;

    ContainerStart start{.container = "c", .cgroup_dir = *cgroup};
    auto run = Admitter::Run(start, "echo $$", 30);
    ASSERT_TRUE(run.ok());
    std::ifstream in(*cgroup + "/cgroup.procs");
    std::stringstream procs;
    procs << in.rdbuf();
    EXPECT_EQ(procs.str(), run->output);
  }
}

}  // namespace
}  // namespace tessera::fakekubelet
