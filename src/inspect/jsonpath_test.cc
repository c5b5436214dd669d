// The JSONPath subset of `-o jsonpath=`: what kubectl prints for the supported forms, and a
// clear refusal for the rest.
#include "inspect/jsonpath.h"

#include <gtest/gtest.h>

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

const json kDoc = json::parse(R"({
  "nodes": [
    {"name": "gpu-a", "gpus": [{"index": 0, "usedMiB": 12288}, {"index": 1, "usedMiB": 0}]},
    {"name": "gpu-b", "gpus": [{"index": 0, "usedMiB": 8192}], "labels": {"tessera.io/pool": "x"}}
  ],
  "totals": {"nodes": 2, "gpus": 3},
  "pending": []
})");

std::string Apply(const std::string& text) {
  Result<JsonPath> path = JsonPath::Parse(text);
  EXPECT_TRUE(path.ok()) << text << ": " << path.status().ToString();
  if (!path.ok()) return "<parse error>";
  Result<std::string> out = path->Execute(kDoc);
  EXPECT_TRUE(out.ok()) << text << ": " << out.status().ToString();
  return out.ok() ? *out : "<execute error>";
}

std::string Refusal(const std::string& text) {
  Result<JsonPath> path = JsonPath::Parse(text);
  EXPECT_FALSE(path.ok()) << text;
  return path.ok() ? "" : path.status().message();
}

TEST(JsonPathTest, FieldsIndexesAndWildcards) {
  EXPECT_EQ(Apply("{.totals.gpus}"), "3");
  EXPECT_EQ(Apply("{$.totals.nodes}"), "2");
  EXPECT_EQ(Apply("{.nodes[0].name}"), "gpu-a");
  EXPECT_EQ(Apply("{.nodes[-1].name}"), "gpu-b");
  EXPECT_EQ(Apply("{.nodes[*].name}"), "gpu-a gpu-b");
  EXPECT_EQ(Apply("{.nodes[*].gpus[*].usedMiB}"), "12288 0 8192");
  EXPECT_EQ(Apply("{.totals.*}"), "3 2");  // object members in key order
  EXPECT_EQ(Apply("{.nodes[1].labels.tessera\\.io/pool}"), "x");
  EXPECT_EQ(Apply("{.nodes[1].labels['tessera.io/pool']}"), "x");
  EXPECT_EQ(Apply("{.totals}"), R"({"gpus":3,"nodes":2})");
  EXPECT_EQ(Apply("{.pending}"), "[]");
  EXPECT_EQ(Apply("{.nodes[0].missing}"), "");  // a missing key prints nothing
  EXPECT_EQ(Apply("nodes: {.totals.nodes}{\"\\n\"}"), "nodes: 2\n");
}

TEST(JsonPathTest, RangeRunsItsBodyPerElement) {
  EXPECT_EQ(Apply("{range .nodes[*]}{.name}{\"\\t\"}{.gpus[0].usedMiB}{\"\\n\"}{end}"),
            "gpu-a\t12288\ngpu-b\t8192\n");
  EXPECT_EQ(Apply("{range .nodes}{.name},{end}"), "gpu-a,gpu-b,");
  EXPECT_EQ(Apply("{range .nodes[*]}{range .gpus[*]}{.index}{end};{end}"), "01;0;");
  EXPECT_EQ(Apply("{range .nodes[*]}{$.totals.gpus}{end}"), "33");
}

TEST(JsonPathTest, UnsupportedFormsAreRefusedClearly) {
  EXPECT_NE(Refusal("{..name}").find("recursive descent (..) is not supported"), std::string::npos);
  EXPECT_NE(Refusal("{.nodes[?(@.name==\"gpu-a\")]}").find("a filter"), std::string::npos);
  EXPECT_NE(Refusal("{.nodes[0:1]}").find("a slice [0:1] is not supported"), std::string::npos);
  EXPECT_NE(Refusal("{.nodes[0,1]}").find("a union [0,1] is not supported"), std::string::npos);
  EXPECT_NE(Refusal("{.nodes.length()}").find("is not supported"), std::string::npos);
  EXPECT_NE(Refusal("{.nodes").find("is not closed"), std::string::npos);
  EXPECT_NE(Refusal("{range .nodes[*]}{.name}").find("without its {end}"), std::string::npos);
  EXPECT_NE(Refusal("{end}").find("without a {range}"), std::string::npos);
  EXPECT_NE(Refusal("{nodes}").find("a path starts with '.'"), std::string::npos);
}

TEST(JsonPathTest, IndexOutOfRangeIsAnError) {
  Result<JsonPath> path = JsonPath::Parse("{.nodes[5].name}");
  ASSERT_TRUE(path.ok());
  Result<std::string> out = path->Execute(kDoc);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("index 5 is out of range (the list has 2)"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::inspect
