// JsonToYaml: kubectl's layout, and strings quoted exactly when YAML would read them otherwise.
#include "inspect/json_to_yaml.h"

#include <gtest/gtest.h>

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

TEST(JsonToYamlTest, KubectlLayout) {
  json doc = json::parse(R"({"nodes":[{"name":"gpu-a","gpus":[{"index":0,"pods":[]}],
    "error":null}],"pending":[],"totals":{"gpus":1,"healthy":true},"warnings":["a","b"],
    "matrix":[[1,2],[]]})");
  EXPECT_EQ(JsonToYaml(doc),
            "matrix:\n"
            "- - 1\n"
            "  - 2\n"
            "- []\n"
            "nodes:\n"
            "- error: null\n"
            "  gpus:\n"
            "  - index: 0\n"
            "    pods: []\n"
            "  name: gpu-a\n"
            "pending: []\n"
            "totals:\n"
            "  gpus: 1\n"
            "  healthy: true\n"
            "warnings:\n"
            "- a\n"
            "- b\n");
}

TEST(JsonToYamlTest, StringsThatYamlWouldMisreadAreQuoted) {
  EXPECT_EQ(JsonToYaml(json{{"a", "gpu-a0"}}), "a: gpu-a0\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "NVIDIA H200"}}), "a: \"NVIDIA H200\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "10.0.0.11"}}), "a: \"10.0.0.11\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "yes"}}), "a: \"yes\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", ""}}), "a: \"\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "x: y"}}), "a: \"x: y\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "two\nlines"}}), "a: \"two\\nlines\"\n");
  EXPECT_EQ(JsonToYaml(json{{"a", "default/p1"}}), "a: default/p1\n");
}

}  // namespace
}  // namespace tessera::inspect
