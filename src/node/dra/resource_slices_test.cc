// ResourceSlicePublisher against the fake API server (testing/fakeapiserver), through the real
// kube client: create, update on change and health, stale slices, retries, repair, stop.
#include "node/dra/resource_slices.h"

#include <gtest/gtest.h>

#include "kube/fake_server_for_test.h"

namespace tessera::node {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kUid[] = "7f6c3a52-9f1e-4c1b-8a53-1f0e2d3c4b5a";

GpuInfo Gpu(int index, bool healthy = true) {
  return {.uuid = "GPU-" + std::to_string(index),
          .index = index,
          .model = "NVIDIA H200",
          .memory_mib = 143771,
          .sms = 132,
          .numa = 0,
          .healthy = healthy};
}

class ResourceSlicePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = kube::StartFakeServer();
    ASSERT_NE(server_, nullptr);
    client_ = kube::ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<ResourceSlicePublisher> Publisher(milliseconds resync = milliseconds(30'000)) {
    return std::make_unique<ResourceSlicePublisher>(
        *client_, ResourceSlicePublisherOptions{
                      .node_name = "node-1",
                      .node_uid = kUid,
                      .resync = resync,
                      .backoff = {.initial = milliseconds(20), .max = milliseconds(100)}});
  }

  // Every ResourceSlice on the server, by name.
  std::map<std::string, json> Slices() {
    std::map<std::string, json> out;
    Result<kube::ObjectList> list = client_->List(kube::kResourceSlices, {});
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    if (list.ok()) {
      for (json& s : list->items) {
        std::string name = kube::NameOf(s);
        out[name] = std::move(s);
      }
    }
    return out;
  }

  // Ours, or null.
  json Ours() {
    std::map<std::string, json> all = Slices();
    auto it = all.find("node-1-gpu.tessera.io");
    return it == all.end() ? json() : it->second;
  }

  static std::vector<std::string> DeviceNames(const json& slice) {
    std::vector<std::string> out;
    for (const json& d : slice["spec"].value("devices", json::array()))
      out.push_back(d["name"].get<std::string>());
    return out;
  }

  static int64_t Generation(const json& slice) { return slice["spec"]["pool"]["generation"]; }

  // Waits until our slice lists exactly `devices`; returns it.
  json WaitForDevices(const std::vector<std::string>& devices) {
    json slice;
    EXPECT_TRUE(kube::WaitUntil([&] {
      slice = Ours();
      return !slice.is_null() && DeviceNames(slice) == devices;
    })) << "the slice is "
        << slice.dump();
    return slice;
  }

  void CreateSlice(const std::string& name, const std::string& node, const std::string& driver,
                   int64_t generation) {
    json slice = ResourceSliceObject({node, "uid-" + node}, json::array(), generation);
    slice["metadata"]["name"] = name;
    slice["spec"]["driver"] = driver;
    Result<json> created = client_->Create(kube::kResourceSlices, "", slice);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(ResourceSlicePublisherTest, PublishesTheGpusOnceUpdateGivesThem) {
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(Slices().empty()) << "nothing is published before the GPUs are known";
  publisher->Update({Gpu(0), Gpu(1)});
  json slice = WaitForDevices({"gpu-0", "gpu-1"});
  EXPECT_EQ(Generation(slice), 1);
  EXPECT_EQ(slice["spec"]["nodeName"], "node-1");
  EXPECT_EQ(slice["spec"]["driver"], "gpu.tessera.io");
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], kUid);
  EXPECT_EQ(slice["spec"]["devices"][1]["capacity"]["memory"]["value"], "143771Mi");
}

TEST_F(ResourceSlicePublisherTest, UnhealthyGpuIsTaintedAndUntaintedOnceHealthy) {
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0), Gpu(1)});
  EXPECT_EQ(Generation(WaitForDevices({"gpu-0", "gpu-1"})), 1);
  publisher->Update({Gpu(0, false), Gpu(1)});
  auto tainted = [&] {
    json slice = Ours();
    if (slice.is_null()) return std::string();
    std::string names;
    for (const json& d : slice["spec"].value("devices", json::array())) {
      if (d.contains("taints")) names += d["name"].get<std::string>() + " ";
    }
    return names;
  };
  EXPECT_TRUE(kube::WaitUntil([&] { return tainted() == "gpu-0 "; })) << tainted();
  EXPECT_EQ(Generation(Ours()), 2);
  EXPECT_EQ(Ours()["spec"]["devices"][0]["taints"][0]["effect"], "NoSchedule");
  publisher->Update({Gpu(0), Gpu(1)});
  EXPECT_TRUE(kube::WaitUntil([&] { return tainted().empty(); })) << tainted();
  EXPECT_EQ(Generation(Ours()), 3);
}

TEST_F(ResourceSlicePublisherTest, NothingIsWrittenWhenNothingChanged) {
  auto publisher = Publisher(milliseconds(20));
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0)});
  json first = WaitForDevices({"gpu-0"});
  publisher->Update({Gpu(0)});
  std::this_thread::sleep_for(milliseconds(300));  // about 15 resyncs
  json later = Ours();
  EXPECT_EQ(kube::ResourceVersionOf(later), kube::ResourceVersionOf(first));
  EXPECT_EQ(Generation(later), 1);
}

// Slices of this driver and node under another name are deleted; other nodes' and other
// drivers' are not. Ours takes a generation above any the pool had.
TEST_F(ResourceSlicePublisherTest, DeletesStaleSlicesOfItsNodeAndDriverOnly) {
  CreateSlice("node-1-gpu.tessera.io-x2k9f", "node-1", "gpu.tessera.io", 7);
  CreateSlice("node-2-gpu.tessera.io", "node-2", "gpu.tessera.io", 1);
  CreateSlice("node-1-nic.example.com", "node-1", "nic.example.com", 1);
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0)});
  EXPECT_EQ(Generation(WaitForDevices({"gpu-0"})), 8);
  EXPECT_TRUE(kube::WaitUntil([&] { return !Slices().contains("node-1-gpu.tessera.io-x2k9f"); }));
  std::map<std::string, json> all = Slices();
  EXPECT_TRUE(all.contains("node-2-gpu.tessera.io"));
  EXPECT_TRUE(all.contains("node-1-nic.example.com"));
  EXPECT_EQ(all.size(), 3u);
}

// The failures go to the next requests of anyone: the test asks nothing while the publisher
// meets them (its waits add up to about 0.25 s).
TEST_F(ResourceSlicePublisherTest, RetriesAfterApiErrors) {
  server_->FailNext(4, 500);
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0)});
  std::this_thread::sleep_for(milliseconds(1'000));
  WaitForDevices({"gpu-0"});
  server_->FailNext(4, 403);
  publisher->Update({Gpu(0), Gpu(1)});
  std::this_thread::sleep_for(milliseconds(1'000));
  EXPECT_EQ(Generation(WaitForDevices({"gpu-0", "gpu-1"})), 2);
}

// The resync puts back a slice someone deleted or changed.
TEST_F(ResourceSlicePublisherTest, RepairsASliceDeletedOrChangedBySomeoneElse) {
  auto publisher = Publisher(milliseconds(50));
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0), Gpu(1)});
  json slice = WaitForDevices({"gpu-0", "gpu-1"});
  slice["spec"]["devices"].erase(1);
  ASSERT_TRUE(client_->Update(kube::kResourceSlices, slice).ok());
  EXPECT_EQ(Generation(WaitForDevices({"gpu-0", "gpu-1"})), 2);
  ASSERT_TRUE(client_->Delete(kube::kResourceSlices, "", "node-1-gpu.tessera.io").ok());
  EXPECT_TRUE(kube::WaitUntil([&] { return Ours().is_object(); }));
  EXPECT_EQ(DeviceNames(Ours()), (std::vector<std::string>{"gpu-0", "gpu-1"}));
}

// kubelet deletes every slice of its node when it starts: ours is back at once, not at the next
// resync (30 s here, which WaitUntil does not wait for).
TEST_F(ResourceSlicePublisherTest, ASliceDeletedIsPublishedAgainAtOnce) {
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0), Gpu(1)});
  WaitForDevices({"gpu-0", "gpu-1"});
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(client_->Delete(kube::kResourceSlices, "", "node-1-gpu.tessera.io").ok());
    EXPECT_TRUE(kube::WaitUntil([&] { return Ours().is_object(); })) << "round " << round;
    EXPECT_EQ(DeviceNames(Ours()), (std::vector<std::string>{"gpu-0", "gpu-1"}));
  }
}

// kubelet removes the slice once the plugin is gone (30 s); a restart keeps it meanwhile.
TEST_F(ResourceSlicePublisherTest, StopLeavesTheSlice) {
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0)});
  WaitForDevices({"gpu-0"});
  publisher->Stop();
  EXPECT_TRUE(Ours().is_object());
  EXPECT_EQ(publisher->Start().code(), StatusCode::kFailedPrecondition);
}

// Stop does not wait for a server that does not answer.
TEST_F(ResourceSlicePublisherTest, StopCancelsACallInFlight) {
  server_->SetLatency(milliseconds(5'000));
  auto publisher = Publisher();
  ASSERT_TRUE(publisher->Start().ok());
  publisher->Update({Gpu(0)});
  std::this_thread::sleep_for(milliseconds(100));
  auto before = std::chrono::steady_clock::now();
  publisher->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(2'000));
  server_->SetLatency(milliseconds(0));
}

TEST_F(ResourceSlicePublisherTest, StartNeedsTheNodeNameAndUid) {
  ResourceSlicePublisher no_uid(*client_, {.node_name = "node-1"});
  Status s = no_uid.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("metadata.uid"), std::string::npos) << s.message();
  ResourceSlicePublisher no_name(*client_, {.node_uid = kUid});
  EXPECT_EQ(no_name.Start().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::node
