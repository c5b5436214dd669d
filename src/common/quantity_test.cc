#include "common/quantity.h"

#include <gtest/gtest.h>

namespace tessera {
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

// Before, valid Kubernetes quantities such as 1e3, 1E3 and 1Ei were refused as an unknown unit.
TEST(Quantity, EveryFormOfTheKubernetesGrammar) {
  struct Case {
    const char* in;
    int64_t want;
  } cases[] = {{"1e3", 1000},
               {"1E3", 1000},
               {"1e+3", 1000},
               {"2e0", 2},
               {"1.5e3", 1500},
               {"0.001E", 1000000000000000},  // E alone is exa
               {"1P", 1000000000000000},
               {"1Pi", int64_t{1} << 50},
               {"1Ti", int64_t{1} << 40},
               {".5k", 500},
               {"5.", 5},
               {"0.5Ki", 512},
               {"1000000000n", 1},
               {"1000000u", 1},
               {"0n", 0},
               {"-0", 0},
               {"0.000", 0},
               {"1.000000000000000000000000000000000000", 1},
               {"00012", 12}};
  for (const Case& c : cases) {
    Result<int64_t> r = ParseWholeQuantity(std::string_view(c.in));
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
               {"99999999999999999999", "too large"},
               {"1Ei", "too large (at most 2^53)"},
               {"15e-1", "not a whole number"},
               {"1e-3", "not a whole number"},
               {"1n", "not a whole number"},
               {"0.001Ki", "not a whole number"},
               {"-1e3", "negative"},
               {"1e", "unknown unit"},
               {"1.2.3", "unknown unit"},
               {"1e99999", "unknown unit"},
               {"1e400", "too large"},
               {".", "not a number"}};
  for (const Case& c : cases) {
    Result<int64_t> r = ParseWholeQuantity(c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace tessera
