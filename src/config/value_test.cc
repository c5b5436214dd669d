#include "config/value.h"

#include <gtest/gtest.h>

namespace tessera::config {
namespace {

TEST(Value, Durations) {
  EXPECT_EQ(*ParseDuration("30s"), std::chrono::seconds(30));
  EXPECT_EQ(*ParseDuration("5m"), std::chrono::minutes(5));
  EXPECT_EQ(*ParseDuration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(*ParseDuration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*ParseDuration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(*ParseDuration("0"), Duration::zero());
  EXPECT_FALSE(ParseDuration("30").ok());
  EXPECT_FALSE(ParseDuration("5x").ok());
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_EQ(FormatDuration(std::chrono::seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(250)), "250ms");
}

TEST(Value, ByteQuantities) {
  EXPECT_EQ(ParseBytes("16Gi")->value, 16ULL << 30);
  EXPECT_EQ(ParseBytes("256Mi")->value, 256ULL << 20);
  EXPECT_EQ(ParseBytes("4096Mi")->value, 4096ULL << 20);
  EXPECT_EQ(ParseBytes("16GiB")->value, 16ULL << 30);
  EXPECT_EQ(ParseBytes("1G")->value, 1000000000ULL);
  EXPECT_EQ(ParseBytes("12345")->value, 12345ULL);
  EXPECT_FALSE(ParseBytes("1.5Gi").ok());
  EXPECT_FALSE(ParseBytes("16Qi").ok());
  EXPECT_FALSE(ParseBytes("-1").ok());
  EXPECT_FALSE(ParseBytes("99999999999Ti").ok());
  EXPECT_EQ(FormatBytes(4096ULL << 20), "4Gi");
  EXPECT_EQ(FormatBytes(1000), "1000");
}

TEST(Value, ScalarsAndLists) {
  EXPECT_TRUE(*ParseBool("yes"));
  EXPECT_FALSE(*ParseBool("off"));
  EXPECT_FALSE(ParseBool("maybe").ok());
  EXPECT_EQ(*ParseInt("-42"), -42);
  EXPECT_FALSE(ParseInt("4x").ok());
  EXPECT_FALSE(ParseInt("99999999999999999999").ok());
  EXPECT_DOUBLE_EQ(*ParseFloat("1.5"), 1.5);
  EXPECT_FALSE(ParseFloat("nan").ok());
  EXPECT_EQ(ParseList(" a, b ,,c"), (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace tessera::config
