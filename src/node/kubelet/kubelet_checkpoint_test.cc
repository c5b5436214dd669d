#include "node/kubelet/kubelet_checkpoint.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "deviceplugin_v1beta1.pb.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;
using namespace tessera::node::testing;

// An Allocate answer as kubelet keeps it: the serialized ContainerAllocateResponse, base64.
std::string Answer(const std::string& tessera_dir) {
  v1beta1::ContainerAllocateResponse resp;
  auto* m = resp.add_mounts();
  m->set_container_path("/var/run/tessera");
  m->set_host_path(tessera_dir);
  auto* other = resp.add_mounts();
  other->set_container_path("/usr/local/lib/tessera/libtessera-cuda.so");
  other->set_host_path("/usr/local/lib/tessera/libtessera-cuda.so");
  return Base64Encode(resp.SerializeAsString());
}

// The shape kubelet 1.36 writes (pkg/kubelet/cm/devicemanager/checkpoint).
std::string Checkpoint(const std::string& entries) {
  return R"({"Data":{"PodDeviceEntries":[)" + entries +
         R"(],"RegisteredDevices":{"nvidia.com/gpu":["0-0","0-1"]}},"Checksum":1234567})";
}

TEST(KubeletCheckpointTest, ReadsEntriesAndTheAllocationEachAnswerNames) {
  std::string text =
      Checkpoint(R"({"PodUID":"u1","ContainerName":"main","ResourceName":"nvidia.com/gpu",)"
                 R"("DeviceIDs":{"0":["0-1"],"1":["1-0","0-1"]},"AllocResp":")" +
                 Answer("/var/lib/tessera/allocations/00ff00ff00ff00ff") +
                 R"("},{"PodUID":"u2","ContainerName":"c","ResourceName":"example.com/nic",)"
                 R"("DeviceIDs":{"-1":["nic0"]},"AllocResp":")" +
                 Answer("/elsewhere/allocations/x") + R"("})");
  auto parsed = ParseKubeletCheckpoint(text, "/var/lib/tessera/allocations");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  const DeviceAssignment& a = (*parsed)[0];
  EXPECT_EQ(a.pod_uid, "u1");
  EXPECT_EQ(a.container, "main");
  EXPECT_EQ(a.resource, "nvidia.com/gpu");
  // A device on two NUMA nodes is listed under both; sorted, once.
  EXPECT_EQ(a.device_ids, (std::vector<std::string>{"0-1", "1-0"}));
  EXPECT_EQ(a.allocation_id, "00ff00ff00ff00ff");
  EXPECT_EQ((*parsed)[1].allocation_id, "");  // not this agent's state folder
}

TEST(KubeletCheckpointTest, NoEntriesAndBrokenFiles) {
  auto empty = ParseKubeletCheckpoint(
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":null},"Checksum":0})", "/s");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_THAT(ParseKubeletCheckpoint("{", "/s").status().message(), HasSubstr("not a kubelet"));
  EXPECT_THAT(ParseKubeletCheckpoint(R"({"Data":{"PodDeviceEntries":[{"PodUID":"u"}]}})", "/s")
                  .status()
                  .message(),
              HasSubstr("lacks"));
  EXPECT_FALSE(
      ParseKubeletCheckpoint(Checkpoint(R"({"PodUID":"u","ContainerName":"c","ResourceName":"r",)"
                                        R"("DeviceIDs":{"-1":["a"]},"AllocResp":"!!"})"),
                             "/s")
          .ok());
}

TEST(KubeletCheckpointTest, KnownEntriesAreTakenFromTheMemo) {
  std::string entry = R"({"PodUID":"u1","ContainerName":"a","ResourceName":"r",)"
                      R"("DeviceIDs":{"-1":["0-0"]},"AllocResp":")" +
                      Answer("/s/allocations/id1") + R"("})";
  EntryMemo memo;
  ASSERT_TRUE(ParseKubeletCheckpoint(Checkpoint(entry), "/s/allocations", &memo).ok());
  ASSERT_EQ(memo.size(), 1u);
  memo.begin()->second.allocation_id = "from-the-memo";
  auto again = ParseKubeletCheckpoint(Checkpoint(entry), "/s/allocations", &memo);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].allocation_id, "from-the-memo");
  // Entries no longer in the file leave the memo.
  ASSERT_TRUE(ParseKubeletCheckpoint(Checkpoint(""), "/s/allocations", &memo).ok());
  EXPECT_TRUE(memo.empty());
}

TEST(KubeletCheckpointTest, FileIsReadAgainWhenKubeletReplacesIt) {
  TempDir dir;
  std::string path = dir.path() + "/kubelet_internal_checkpoint";
  KubeletCheckpoint checkpoint(path, dir.path() + "/allocations");
  auto none = checkpoint.List();
  ASSERT_TRUE(none.ok());  // kubelet has allocated nothing yet
  EXPECT_TRUE((*none)->empty());
  auto write = [&](const std::string& text) {  // as kubelet does: a new file, renamed
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  };
  write(Checkpoint(R"({"PodUID":"u1","ContainerName":"a","ResourceName":"r",)"
                   R"("DeviceIDs":{"-1":["0-0"]},"AllocResp":")" +
                   Answer(dir.path() + "/allocations/id1") + R"("})"));
  ASSERT_EQ((*checkpoint.List())->size(), 1u);
  EXPECT_EQ((**checkpoint.List())[0].allocation_id, "id1");
  write(Checkpoint(R"({"PodUID":"u1","ContainerName":"a","ResourceName":"r",)"
                   R"("DeviceIDs":{"-1":["0-0"]},"AllocResp":")" +
                   Answer(dir.path() + "/allocations/id1") +
                   R"("},{"PodUID":"u2","ContainerName":"b","ResourceName":"r",)"
                   R"("DeviceIDs":{"-1":["0-1"]},"AllocResp":")" +
                   Answer(dir.path() + "/allocations/id2") + R"("})"));
  EXPECT_EQ((*checkpoint.List())->size(), 2u);
  write("garbage");
  EXPECT_THAT(checkpoint.List().status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace tessera::node
