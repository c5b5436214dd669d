#include "node/kubelet/json_slices.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

TEST(JsonSlicesTest, MembersAndElementsAsWritten) {
  std::string text = R"( {"a": {"x": "}]\"", "y": [1, {"z": null}]}, "b" : [ {"k":1} , "s", 3 ]} )";
  EXPECT_EQ(JsonMember(text, "a"), R"({"x": "}]\"", "y": [1, {"z": null}]})");
  auto b = JsonMember(text, "b");
  ASSERT_TRUE(b);
  auto items = JsonElements(*b);
  ASSERT_TRUE(items);
  ASSERT_EQ(items->size(), 3u);
  EXPECT_EQ((*items)[0], R"({"k":1})");
  EXPECT_EQ((*items)[1], R"("s")");
  EXPECT_EQ((*items)[2], "3");
  EXPECT_EQ(JsonMember(*JsonMember(text, "a"), "y"), R"([1, {"z": null}])");
  EXPECT_FALSE(JsonMember(text, "c"));
  EXPECT_TRUE(JsonElements("[]")->empty());
}

TEST(JsonSlicesTest, StringsWithAndWithoutEscapes) {
  EXPECT_EQ(JsonString(R"( "plain" )"), "plain");
  EXPECT_EQ(JsonString(R"("a\"b\u00e9")"), "a\"b\xc3\xa9");
  EXPECT_FALSE(JsonString("12"));
  EXPECT_FALSE(JsonString(R"("open)"));
  auto members = JsonMembers(R"({"k": [1], "j": {}})");
  ASSERT_TRUE(members);
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[1].first, "j");
  EXPECT_EQ((*members)[1].second, "{}");
}

// A quote after an even run of backslashes ends the string; after an odd run it is escaped.
TEST(JsonSlicesTest, BackslashRunsBeforeAQuote) {
  EXPECT_EQ(JsonMember(R"({"a": "x\\", "b": 1})", "b"), "1");
  EXPECT_EQ(JsonMember(R"({"a": "x\\\"y", "b": 2})", "a"), R"("x\\\"y")");
  EXPECT_EQ(JsonString(R"("\\")"), "\\");
  EXPECT_EQ(JsonString(R"("\\\"")"), "\\\"");
  EXPECT_FALSE(JsonString(R"("\")"));
  EXPECT_FALSE(JsonMember(R"({"a": "x\"})", "a"));
}

TEST(JsonSlicesTest, BrokenTextIsNoSlice) {
  for (const char* bad : {"", "{", R"({"a":)", R"({"a":[1,2})", R"({"a":"open})", "[1,]x"}) {
    EXPECT_FALSE(JsonMember(bad, "a")) << bad;
  }
  EXPECT_FALSE(JsonElements("[1,2"));
  EXPECT_FALSE(JsonElements("[1 2]"));
  EXPECT_FALSE(JsonElements("{}"));
}

}  // namespace
}  // namespace tessera::node
