#include "common/strings.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Strings, SplitAndTrim) {
  EXPECT_EQ(Split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split("a,,b", ',', false), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Trim("  x y \n"), "x y");
}

TEST(Strings, ClosestMatchSuggestsTyposOnly) {
  std::vector<std::string> keys = {"TESSERA_LOG_LEVEL", "TESSERA_LOG_FORMAT"};
  EXPECT_EQ(ClosestMatch("TESSERA_LOG_LEVL", keys), "TESSERA_LOG_LEVEL");
  EXPECT_EQ(ClosestMatch("SOMETHING_ELSE_ENTIRELY", keys), std::nullopt);
}

// The published FNV-1a 64 test values: names made from it must never change.
TEST(Strings, Fnv1aIsTheStandardHash) {
  EXPECT_EQ(Fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a("foobar"), 0x85944171f73967e8ull);
}

TEST(Strings, Base64RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "line1\nline2\n"}) {
    auto decoded = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(decoded.has_value()) << s;
    EXPECT_EQ(*decoded, s);
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_EQ(Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_EQ(Base64Decode("aGVsbG8"), std::nullopt);
  EXPECT_EQ(Base64Decode("a=Vs"), std::nullopt);
  EXPECT_EQ(Base64Decode("aGV*bG8="), std::nullopt);
}

TEST(Strings, PrometheusLabelValueEscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(PrometheusLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(PrometheusLabelValue("GPU-1"), "GPU-1");
}

TEST(Strings, Join) {
  EXPECT_EQ(Join({}, ","), "");
  EXPECT_EQ(Join({"a"}, ","), "a");
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
}

TEST(Strings, PercentEncodeKeepsLettersDigitsAndTheGivenCharacters) {
  EXPECT_EQ(PercentEncode("a b/c", "-._~"), "a%20b%2Fc");
  EXPECT_EQ(PercentEncode("x-y.z_~!", "-._~"), "x-y.z_~%21");
  EXPECT_EQ(PercentEncode("k!%", "!"), "k!%25");
  EXPECT_EQ(PercentEncode("\xc3\xa9", ""), "%C3%A9");  // bytes of UTF-8, never letters
}

}  // namespace
}  // namespace tessera
