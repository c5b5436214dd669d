#include "kube/objects.h"

#include <gtest/gtest.h>

#include <regex>

namespace tessera::kube {
namespace {

TEST(ObjectsTest, ReadersAndKeys) {
  Json pod = Json::parse(R"({"metadata":{"name":"p1","namespace":"default","uid":"u1",
    "resourceVersion":"42","annotations":{"a":"1","n":5},"labels":{"app":"x"}},
    "spec":{"nodeName":"n1"},"status":{"phase":"Running"}})");
  EXPECT_EQ(ObjectKey(pod), "default/p1");
  EXPECT_EQ(UidOf(pod), "u1");
  EXPECT_EQ(ResourceVersionOf(pod), "42");
  EXPECT_EQ(NodeNameOf(pod), "n1");
  EXPECT_EQ(PhaseOf(pod), "Running");
  EXPECT_EQ(Annotation(pod, "a"), "1");
  EXPECT_EQ(Annotation(pod, "n"), "");  // not a string
  EXPECT_EQ(Annotation(pod, "missing"), "");
  EXPECT_EQ(Annotations(pod), (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_EQ(Labels(pod), (std::map<std::string, std::string>{{"app", "x"}}));

  Json node = Json::parse(R"({"metadata":{"name":"n1"}})");
  EXPECT_EQ(ObjectKey(node), "n1");
  EXPECT_EQ(NodeNameOf(node), "");
  EXPECT_EQ(Annotation(Json(), "a"), "");
  EXPECT_EQ(StringAt(Json::array(), "/metadata/name"), "");
}

TEST(ObjectsTest, MetadataPatchSetsRemovesAndPreconditions) {
  Json patch = MetadataMapPatch("annotations", {{"set", "v"}, {"gone", std::nullopt}}, "17");
  EXPECT_EQ(patch, Json::parse(R"({"metadata":{"annotations":{"set":"v","gone":null},
                                    "resourceVersion":"17"}})"));
  EXPECT_FALSE(MetadataMapPatch("labels", {}, "")["metadata"].contains("resourceVersion"));
}

TEST(ObjectsTest, Rfc3339Formats) {
  EXPECT_TRUE(
      std::regex_match(Rfc3339Now(false), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(
      std::regex_match(Rfc3339Now(true), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
}

}  // namespace
}  // namespace tessera::kube
