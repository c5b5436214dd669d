#include "scheduler/quantity.h"

#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

TEST(Quantity, WholeForms) {
  struct Case {
    nlohmann::json in;
    int64_t want;
  } cases[] = {{"4", 4},      {"0", 0},     {"4096", 4096}, {"1k", 1000},
               {"2Ki", 2048}, {"1000m", 1}, {"1.5k", 1500}, {" 7 ", 7},
               {"+3", 3},     {16, 16},     {2.0, 2},       {"1Mi", 1048576}};
  for (const Case& c : cases) {
    Result<int64_t> r = ParseWholeQuantity(c.in);
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.status().message();
    EXPECT_EQ(*r, c.want) << c.in;
  }
}

TEST(Quantity, RejectsWithReason) {
  struct Case {
    nlohmann::json in;
    const char* why;
  } cases[] = {{"-1", "negative"},
               {"0.5", "not a whole number"},
               {"500m", "not a whole number"},
               {"abc", "not a number"},
               {"", "empty"},
               {"4X", "unknown unit"},
               {-2, "negative"},
               {1.5, "not a whole number"},
               {true, "not a string or a number"},
               {"99999999999999999999", "too large"}};
  for (const Case& c : cases) {
    Result<int64_t> r = ParseWholeQuantity(c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace tessera::scheduler
