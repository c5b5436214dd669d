// ClusterPod keeps what Tessera reads (name, annotations, GPU requests) and changes only what this
// machine cannot give (image, command, cpu and memory).
#include "demo/example_pod.h"

#include <gtest/gtest.h>

namespace tessera::demo {
namespace {

using nlohmann::json;

json Example() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "vcuda-demo", "namespace": "default",
                 "annotations": {"tencent.com/vcuda-core-limit": "50"}},
    "spec": {"containers": [{
      "name": "main", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
      "command": ["nvidia-smi"], "args": ["-L"],
      "resources": {
        "limits": {"cpu": "4", "memory": "32Gi", "tencent.com/vcuda-core": "50",
                   "tencent.com/vcuda-memory": "16"},
        "requests": {"cpu": "4", "memory": "32Gi"}}}]}})");
}

TEST(ClusterPodTest, KeepsWhatTesseraReads) {
  json pod = ClusterPod(Example());
  EXPECT_EQ(pod["metadata"], Example()["metadata"]);
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["name"], "main");
  EXPECT_EQ(c["resources"]["limits"],
            json({{"tencent.com/vcuda-core", "50"}, {"tencent.com/vcuda-memory", "16"}}));
}

TEST(ClusterPodTest, ChangesImageCommandCpuAndMemory) {
  json pod = ClusterPod(Example());
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], kWorkloadImage);
  EXPECT_EQ(c["command"], json(WorkloadCommand()));
  EXPECT_FALSE(c.contains("args"));
  EXPECT_FALSE(c["resources"].contains("requests"));  // only cpu and memory were there
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
}

TEST(ClusterPodTest, EveryContainer) {
  json example = Example();
  example["spec"]["containers"].push_back({{"name", "side"}, {"image", "busybox"}});
  json pod = ClusterPod(example);
  ASSERT_EQ(pod["spec"]["containers"].size(), 2u);
  EXPECT_EQ(pod["spec"]["containers"][1]["image"], kWorkloadImage);
  EXPECT_FALSE(pod["spec"]["containers"][1].contains("resources"));
}

TEST(ClusterPodTest, NotAPodStaysAsItIs) {
  for (const json& j : {json(), json::parse(R"({"kind": "Pod"})"),
                        json::parse(R"({"spec": {"containers": "none"}})")}) {
    EXPECT_EQ(ClusterPod(j), j) << j.dump();
  }
}

}  // namespace
}  // namespace tessera::demo
