// Unit tests of the limits parser (limits.c): sizes and the limits file format.
#include <gtest/gtest.h>

extern "C" {
#include "hook/limits.h"
}

namespace {

TEST(ParseSize, AcceptsBytesAndPowersOf1024) {
  struct {
    const char* text;
    uint64_t want;
  } cases[] = {{"0", 0},           {"4096", 4096},        {"1k", 1024},        {"1K", 1024},
               {"3m", 3ull << 20}, {"2g", 2ull << 30},    {"2Gi", 2ull << 30}, {"2GiB", 2ull << 30},
               {"1t", 1ull << 40}, {"16Mi", 16ull << 20}, {"7gb", 7ull << 30}};
  for (const auto& c : cases) {
    uint64_t got = 1;
    const char* why = nullptr;
    EXPECT_EQ(hook_parse_size(c.text, &got, &why), 0) << c.text << ": " << (why ? why : "");
    EXPECT_EQ(got, c.want) << c.text;
  }
}

TEST(ParseSize, RejectsWhatIsNotASize) {
  for (const char* text : {"", "g", "-1", "1.5g", "1 g", "1gg", "1e9", "0x10",
                           "18446744073709551616", "17179869184g"}) {
    uint64_t got;
    const char* why = nullptr;
    EXPECT_EQ(hook_parse_size(text, &got, &why), -1) << text;
    EXPECT_NE(why, nullptr) << text;
  }
}

TEST(LimitsFile, ParsesEveryKey) {
  hook_limits limits;
  ASSERT_EQ(hook_limits_parse_file("# comment\nversion=1\nmode=elastic\ndevices=2\n"
                                   "uuid.0=GPU-aaaa\nuuid.1=GPU-bbbb\nmemory.0=4294967296\n"
                                   "memory.1=2Gi\ncores.0=30\nceiling.0=80\ncores.1=100\n\n"
                                   "region=/r/region\n",
                                   "limits", &limits),
            0)
      << limits.message;
  EXPECT_TRUE(limits.active);
  EXPECT_FALSE(limits.error);
  EXPECT_EQ(limits.mode, HOOK_CORE_ELASTIC);
  EXPECT_EQ(limits.device_count, 2);
  EXPECT_STREQ(limits.uuid[1], "GPU-bbbb");
  EXPECT_EQ(limits.memory[0], 4ull << 30);
  EXPECT_EQ(limits.memory[1], 2ull << 30);
  EXPECT_EQ(limits.cores[0], 30);
  EXPECT_EQ(limits.cores[1], 0) << "100 percent means no limit";
  EXPECT_EQ(limits.ceiling[0], 80);
  EXPECT_EQ(limits.ceiling[1], 0);
  EXPECT_STREQ(limits.region_path, "/r/region");
}

TEST(LimitsFile, AcceptsCrLfLines) {
  hook_limits limits;
  EXPECT_EQ(hook_limits_parse_file("version=1\r\nmemory.0=1g\r\n", "limits", &limits), 0)
      << limits.message;
  EXPECT_EQ(limits.memory[0], 1ull << 30);
}

TEST(LimitsFile, RejectsMistakesWithTheLineAndKey) {
  struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"version=1\nmemory=1g\n", "unknown key \"memory\""},
      {"version=1\nmemory.16=1g\n", "memory.<device index 0-15>"},
      {"version=1\nmode=soft\n", "line 2: mode=\"soft\""},
      {"version=1\nuuid.0=abc\n", "GPU-"},
      {"version=1\nregion=relative\n", "absolute path"},
      {"version=1\njust a line\n", "expected key=value"},
      {"version=1\ndevices=17\n", "0 to 16"},
      {"version=1\ncores.0=30\nceiling.0=0\n", "ceiling=\"0\" (allowed: a percent 1 to 100"},
      {"version=1\ncores.0=30\nceiling.0=20\n", "ceiling.0 is below cores.0"},
      {"version=1\nceiling.1=50\n", "ceiling.1 is set but cores.1 is not"},
  };
  for (const auto& c : cases) {
    hook_limits limits;
    EXPECT_EQ(hook_limits_parse_file(c.text, "limits", &limits), -1) << c.text;
    EXPECT_TRUE(limits.error);
    EXPECT_NE(std::string(limits.message).find(c.message), std::string::npos)
        << c.text << " -> " << limits.message;
  }
}

}  // namespace
