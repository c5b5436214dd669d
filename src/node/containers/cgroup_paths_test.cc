#include "node/containers/cgroup_paths.h"

#include <filesystem>
#include <tuple>

#include <gtest/gtest.h>

#include "node/containers/fake_cgroup_tree.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using namespace tessera::node::testing;

const std::string kUid = "5f1c2a3b-0d4e-4f60-8a7b-9c0d1e2f3a4b";
const std::string kId = "3b8e2f0c9d1a4b5c6d7e8f901a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
const std::string kOtherId = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

QosClass ToQos(TestQos q) {
  switch (q) {
    case TestQos::kGuaranteed:
      return QosClass::kGuaranteed;
    case TestQos::kBurstable:
      return QosClass::kBurstable;
    case TestQos::kBestEffort:
      return QosClass::kBestEffort;
  }
  return QosClass::kGuaranteed;
}

TEST(CgroupPathsTest, ParsesContainerIdsOfEachRuntime) {
  auto c = ParseContainerId("containerd://" + kId);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "containerd");
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(ParseContainerId("cri-o://abc")->runtime, "cri-o");
  EXPECT_EQ(ParseContainerId("docker://abc")->id, "abc");
  for (const char* bad : {"", "abc", "containerd://", "://abc", "containerd://a/../b"}) {
    EXPECT_FALSE(ParseContainerId(bad)) << bad;
  }
  EXPECT_EQ(ParseQosClass("Burstable"), QosClass::kBurstable);
  EXPECT_EQ(ParseQosClass("BestEffort"), QosClass::kBestEffort);
  EXPECT_FALSE(ParseQosClass(""));
}

using Layout = std::tuple<CgroupVersion, CgroupDriver, TestQos>;

std::string LayoutName(const ::testing::TestParamInfo<Layout>& info) {
  auto [version, driver, qos] = info.param;
  const char* qos_names[] = {"Guaranteed", "Burstable", "BestEffort"};
  return std::string(version == CgroupVersion::kV1 ? "V1" : "V2") +
         (driver == CgroupDriver::kCgroupfs ? "Cgroupfs" : "Systemd") +
         qos_names[static_cast<int>(qos)];
}

class CgroupLayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(CgroupLayoutTest, FindsTheContainerWhateverTheQosHint) {
  auto [version, driver, qos] = GetParam();
  TempDir dir;
  std::string root = dir.path() + "/cgroup";
  MakeCgroupRoot(root, version);
  std::string hierarchy = TestHierarchy(root, version);
  std::string want =
      MakeContainerCgroup(hierarchy, driver, qos, kUid, ContainerdFolder(driver, kId));
  // Another container of the same pod (the pause container, say).
  MakeContainerCgroup(hierarchy, driver, qos, kUid, ContainerdFolder(driver, kOtherId));

  EXPECT_EQ(FindContainerCgroup(root, kUid, ToQos(qos), kId), want);
  EXPECT_EQ(FindContainerCgroup(root, kUid, std::nullopt, kId), want);
  QosClass wrong = qos == TestQos::kBurstable ? QosClass::kBestEffort : QosClass::kBurstable;
  EXPECT_EQ(FindContainerCgroup(root, kUid, wrong, kId), want);
  EXPECT_FALSE(FindContainerCgroup(root, kUid, ToQos(qos), "0123"));
  EXPECT_FALSE(FindContainerCgroup(root, "11111111-2222-3333-4444-555555555555", ToQos(qos), kId));
}

INSTANTIATE_TEST_SUITE_P(
    AllLayouts, CgroupLayoutTest,
    ::testing::Combine(::testing::Values(CgroupVersion::kV1, CgroupVersion::kV2),
                       ::testing::Values(CgroupDriver::kCgroupfs, CgroupDriver::kSystemd),
                       ::testing::Values(TestQos::kGuaranteed, TestQos::kBurstable,
                                         TestQos::kBestEffort)),
    LayoutName);

TEST(CgroupPathsTest, EachRuntimesFolderNameButNotCrioConmon) {
  for (auto [driver, folder] : std::vector<std::pair<CgroupDriver, std::string>>{
           {CgroupDriver::kSystemd, "crio-" + kId + ".scope"},
           {CgroupDriver::kSystemd, "docker-" + kId + ".scope"},
           {CgroupDriver::kSystemd, "cri-containerd-" + kId + ".scope"},
           {CgroupDriver::kCgroupfs, "crio-" + kId},
           {CgroupDriver::kCgroupfs, kId}}) {
    TempDir dir;
    MakeCgroupRoot(dir.path(), CgroupVersion::kV2);
    // CRI-O's monitor sorts first in most listings; it must not be taken.
    MakeContainerCgroup(
        dir.path(), driver, TestQos::kBurstable, kUid,
        driver == CgroupDriver::kSystemd ? "crio-conmon-" + kId + ".scope" : "crio-conmon-" + kId);
    std::string want = MakeContainerCgroup(dir.path(), driver, TestQos::kBurstable, kUid, folder);
    EXPECT_EQ(FindContainerCgroup(dir.path(), kUid, QosClass::kBurstable, kId), want) << folder;
  }
}

TEST(CgroupPathsTest, V1FallsBackToOtherControllers) {
  TempDir dir;
  MakeCgroupRoot(dir.path(), CgroupVersion::kV1);
  std::filesystem::remove_all(dir.path() + "/pids");  // a kernel without the pids controller
  std::string want = MakeContainerCgroup(dir.path() + "/memory", CgroupDriver::kSystemd,
                                         TestQos::kGuaranteed, kUid, "docker-" + kId + ".scope");
  EXPECT_EQ(FindContainerCgroup(dir.path(), kUid, QosClass::kGuaranteed, kId), want);
}

TEST(CgroupPathsTest, UnderKubeletsCgroupRoot) {
  TempDir dir;
  MakeCgroupRoot(dir.path(), CgroupVersion::kV1);
  // kubelet --cgroup-root=/node-a: kubepods is under node-a in every hierarchy.
  std::string want = MakeContainerCgroup(dir.path() + "/pids/node-a", CgroupDriver::kCgroupfs,
                                         TestQos::kBestEffort, kUid, kId);
  EXPECT_EQ(FindContainerCgroup(dir.path(), kUid, QosClass::kBestEffort, kId, "/node-a"), want);
  EXPECT_EQ(FindContainerCgroup(dir.path(), kUid, QosClass::kBestEffort, kId, "node-a/"), want);
  EXPECT_FALSE(FindContainerCgroup(dir.path(), kUid, QosClass::kBestEffort, kId))
      << "not at the hierarchy's root";
  EXPECT_FALSE(FindContainerCgroup(dir.path(), kUid, QosClass::kBestEffort, kId, "/node-b"));
}

TEST(CgroupPathsTest, NothingFoundOutsideACgroupTreeOrForAStrangeUid) {
  TempDir dir;
  EXPECT_FALSE(FindContainerCgroup(dir.path() + "/missing", kUid, QosClass::kBurstable, kId));
  EXPECT_TRUE(CgroupHierarchies(dir.path() + "/missing").empty());
  MakeCgroupRoot(dir.path(), CgroupVersion::kV2);
  MakeContainerCgroup(dir.path(), CgroupDriver::kCgroupfs, TestQos::kGuaranteed, kUid, kId);
  EXPECT_FALSE(FindContainerCgroup(dir.path(), kUid, QosClass::kGuaranteed, ""));
  EXPECT_TRUE(PodCgroupCandidates("../" + kUid, std::nullopt).empty());
  EXPECT_TRUE(PodCgroupCandidates("", std::nullopt).empty());
  EXPECT_EQ(PodCgroupCandidates(kUid, std::nullopt).size(), 6u);
}

}  // namespace
}  // namespace tessera::node
