// BoardSlicePublisher: the node's ResourceSlice follows the DeviceBoard (discovery, health).
#include "node/dra/board_slice_publisher.h"

#include <gtest/gtest.h>

#include "kube/fake_server_for_test.h"

namespace tessera::node {
namespace {

using nlohmann::json;

GpuInfo Gpu(int index) {
  return {.uuid = "GPU-" + std::to_string(index), .index = index, .memory_mib = 81920};
}

TEST(BoardSlicePublisherTest, TheSliceFollowsTheBoardsGpusAndHealth) {
  auto server = kube::StartFakeServer();
  ASSERT_NE(server, nullptr);
  auto client = kube::ClientFor(*server);
  ASSERT_NE(client, nullptr);
  DeviceBoard board;
  board.Set({Gpu(0), Gpu(1)});
  BoardSlicePublisher slices(*client, {.node_name = "node-1", .node_uid = "u-1"}, board);
  ASSERT_TRUE(slices.Start().ok());

  auto devices = [&] {  // a tainted device's name ends in "!"
    std::vector<std::string> names;
    Result<json> slice = client->Get(kube::kResourceSlices, "", "node-1-gpu.tessera.io");
    if (!slice.ok()) return std::vector<std::string>{"(no slice)"};
    for (const json& d : slice->at("spec").value("devices", json::array())) {
      names.push_back(d["name"].get<std::string>() + (d.contains("taints") ? "!" : ""));
    }
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_TRUE(kube::WaitUntil([&] {
    return devices() == Names{"gpu-0", "gpu-1"};
  })) << devices()[0];
  ASSERT_TRUE(board.SetHealthy("GPU-1", false));
  EXPECT_TRUE(kube::WaitUntil([&] { return devices() == Names{"gpu-0", "gpu-1!"}; }));
  board.SetServing(true);  // a change of the board that is no change of the slice
  ASSERT_TRUE(board.SetHealthy("GPU-1", true));
  EXPECT_TRUE(kube::WaitUntil([&] { return devices() == Names{"gpu-0", "gpu-1"}; }));
  board.Set({Gpu(0), Gpu(1), Gpu(2)});
  EXPECT_TRUE(kube::WaitUntil([&] { return devices() == Names{"gpu-0", "gpu-1", "gpu-2"}; }));
  slices.Stop();
  EXPECT_EQ(devices(), (Names{"gpu-0", "gpu-1", "gpu-2"})) << "Stop leaves the slice";
}

}  // namespace
}  // namespace tessera::node
