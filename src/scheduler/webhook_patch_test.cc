// What /mutate adds besides spec.schedulerName.
// - A vGPU container that gave memory or cores without nvidia.com/gpu was placed by the
//   scheduler, but kubelet gives devices only to containers that ask for the device plugin's
//   resource: it ran without its limits. /mutate now adds nvidia.com/gpu: 1 to such containers, as
//   HAMi's webhook does.
// - The nodeSelector tessera.io/gpu-node=true (scheduler.webhook.gpu-node-selector).
#include <gtest/gtest.h>

#include "common/strings.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeReview;
using testing::TestContainer;

json Patch(const Webhook& webhook, const json& pod) {
  Result<json> r = webhook.Mutate(MakeReview(pod));
  EXPECT_TRUE(r.ok());
  if (!r.ok() || !(*r)["response"].contains("patch")) return json::array();
  return json::parse(*Base64Decode((*r)["response"]["patch"].get<std::string>()));
}

TEST(WebhookCount, VgpuMemoryOrCoresWithoutACountGetOneGpu) {
  ClusterState state{DialectConfig{}};
  Webhook webhook(state, "tessera");
  json pod = MakePod("p", std::vector<TestContainer>{
                              {"warmup", {{"nvidia.com/gpumem", 1000}}, true},
                              {"cpu-only", {{"cpu", "1"}}},
                              {"counted", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1000}}},
                              {"cores", {{"nvidia.com/gpucores", 20}}},
                              {"share", {{"aliyun.com/gpu-mem", 2}}}});
  // A container with requests but no limits, and one with limits of other resources.
  pod["spec"]["containers"][2]["resources"] = {{"requests", {{"nvidia.com/gpucores", 20}}}};
  pod["spec"]["containers"].push_back(
      {{"name", "percent"}, {"image", "busybox"}, {"resources", {{"limits", {{"cpu", "1"}}}}}});
  pod["spec"]["containers"][4]["resources"]["limits"]["nvidia.com/gpumem-percentage"] = 50;
  EXPECT_EQ(Patch(webhook, pod), json::parse(R"([
    {"op":"add","path":"/spec/schedulerName","value":"tessera"},
    {"op":"add","path":"/spec/initContainers/0/resources/limits/nvidia.com~1gpu","value":"1"},
    {"op":"add","path":"/spec/containers/2/resources/limits","value":{"nvidia.com/gpu":"1"}},
    {"op":"add","path":"/spec/containers/4/resources/limits/nvidia.com~1gpu","value":"1"}
  ])"))
      << "the gpushare and counted containers are left as they are";
}

TEST(WebhookCount, RenamedCountResourceIsTheOneAdded) {
  DialectConfig dialects;
  dialects.vgpu_count = "example.com/vgpu";
  dialects.vgpu_memory = "example.com/vgpu-memory";
  ClusterState state{dialects};
  Webhook webhook(state, "tessera");
  json pod = MakePod("p", {{"example.com/vgpu-memory", 1000}});
  pod["spec"]["schedulerName"] = "tessera";
  EXPECT_EQ(Patch(webhook, pod), json::parse(R"([
    {"op":"add","path":"/spec/containers/0/resources/limits/example.com~1vgpu","value":"1"}
  ])"));
}

TEST(WebhookNodeSelector, GpuPodsAreKeptToGpuNodes) {
  ClusterState state{DialectConfig{}};
  Webhook webhook(state, "tessera", DefaultTrustedUsers(), /*gpu_node_selector=*/true);
  nlohmann::json pod = testing::MakePod("p", {{"aliyun.com/gpu-mem", 2}});
  pod["spec"]["schedulerName"] = "tessera";
  EXPECT_EQ(Patch(webhook, pod), nlohmann::json::parse(R"([
    {"op":"add","path":"/spec/nodeSelector","value":{"tessera.io/gpu-node":"true"}}
  ])"));
  // Beside the pod's own selector, which stays.
  pod["spec"]["nodeSelector"] = {{"zone", "a"}};
  EXPECT_EQ(Patch(webhook, pod), nlohmann::json::parse(R"([
    {"op":"add","path":"/spec/nodeSelector/tessera.io~1gpu-node","value":"true"}
  ])"));
  // A pod that names the label itself is left as it is; so is a pod without a GPU.
  pod["spec"]["nodeSelector"]["tessera.io/gpu-node"] = "true";
  EXPECT_EQ(Patch(webhook, pod), nlohmann::json::array());
  EXPECT_EQ(Patch(webhook, testing::MakePod("cpu", {{"cpu", "1"}})), nlohmann::json::array());
}

}  // namespace
}  // namespace tessera::scheduler
