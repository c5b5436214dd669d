#include "annotations/allocated.h"

#include <gtest/gtest.h>

namespace tessera::annotations {
namespace {

TEST(Allocated, RoundTrips) {
  const Allocated cases[] = {
      {},
      {{"main", {"a1b2", {"GPU-a"}}}},
      {{"main", {"a1b2", {"GPU-a", "GPU-b"}}}, {"version", {"c3", {}}}, {"warmup", {"d4", {"x"}}}},
  };
  for (const Allocated& a : cases) {
    std::string text = AllocatedToJson(a);
    Result<Allocated> back = ParseAllocated(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    EXPECT_EQ(*back, a) << text;
  }
}

// What agents wrote before this library: the same shape, and fields added later ignored.
TEST(Allocated, ReadsWhatEarlierAgentsWrote) {
  Result<Allocated> back = ParseAllocated(
      R"({"main":{"allocation":"0f3c","devices":["GPU-1"]},"side":{"allocation":"9a","later":1}})");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, (Allocated{{"main", {"0f3c", {"GPU-1"}}}, {"side", {"9a", {}}}}));
}

TEST(Allocated, ErrorsNameTheContainerAndField) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"{", "tessera.io/allocated is not valid JSON"},
      {"[]", "tessera.io/allocated is not a JSON object"},
      {R"({"main":1})", "container main is not an object"},
      {R"({"main":{"devices":[]}})", "container main: field \"allocation\" is missing"},
      {R"({"main":{"allocation":"a","devices":"GPU-a"}})", "\"devices\" must be a list"},
      {R"({"main":{"allocation":"a","devices":[1]}})", "\"devices\" must hold GPU UUIDs"},
  };
  for (const Case& c : cases) {
    Result<Allocated> r = ParseAllocated(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace tessera::annotations
