// Unit tests of the limits parser (limits.c): sizes and the limits file format.
#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

extern "C" {
#include "hook/limits.h"
}

namespace {

// `body` as a whole limits file: followed by its end marker.
std::string Whole(const std::string& body) {
  return body + "end=" + std::to_string(body.size()) + "\n";
}

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
  ASSERT_EQ(hook_limits_parse_file(Whole("# comment\nversion=2\nmode=elastic\ndevices=2\n"
                                         "uuid.0=GPU-aaaa\nuuid.1=MIG-bbbb\nmemory.0=4294967296\n"
                                         "memory.1=2Gi\ncores.0=30\nceiling.0=80\ncores.1=100\n\n"
                                         "region=/r/region\n")
                                       .c_str(),
                                   "limits", &limits),
            0)
      << limits.message;
  EXPECT_TRUE(limits.active);
  EXPECT_FALSE(limits.error);
  EXPECT_EQ(limits.mode, HOOK_CORE_ELASTIC);
  EXPECT_EQ(limits.device_count, 2);
  EXPECT_STREQ(limits.uuid[1], "MIG-bbbb");
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
  EXPECT_EQ(hook_limits_parse_file(
                Whole("version=2\r\ndevices=1\r\nmemory.0=1g\r\ncores.0=0\r\n").c_str(), "limits",
                &limits),
            0)
      << limits.message;
  EXPECT_EQ(limits.memory[0], 1ull << 30);
}

TEST(LimitsFile, RejectsMistakesWithTheLineAndKey) {
  struct {
    std::string text;
    const char* message;
  } cases[] = {
      {"version=2\nmemory=1g\n", "unknown key \"memory\""},
      {"version=2\nmemory.16=1g\n", "memory.<device index 0-15>"},
      {"version=2\nmode=soft\n", "line 2: mode=\"soft\""},
      {"version=2\nuuid.0=abc\n", "GPU-"},
      {"version=2\nregion=relative\n", "absolute path"},
      {"version=2\njust a line\n", "expected key=value"},
      {"version=2\ndevices=17\n", "0 to 16"},
      {"version=2\ncores.0=30\nceiling.0=0\n", "ceiling=\"0\" (allowed: a percent 1 to 100"},
      {Whole("version=2\ndevices=1\nmemory.0=0\ncores.0=30\nceiling.0=20\n"),
       "ceiling.0 is below cores.0"},
      {Whole("version=2\ndevices=2\nmemory.0=0\ncores.0=0\nmemory.1=0\ncores.1=0\nceiling.1=50\n"),
       "ceiling.1 is set but cores.1 is not"},
      {"version=1\ndevices=0\nend=20\n", "unsupported version \"1\""},
      // Regression (issue 15): a file cut short, or pieced together, is not a smaller limit.
      {"version=2\ndevices=1\ncores.0=0\nmemory.0=10", "no end=<bytes> line"},
      {"version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nend=42", "does not match the file"},
      {"version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nmemory.0=1g\nend=42\n", "duplicate key"},
      {"version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nend=41\n", "expected end=42"},
      {Whole("version=2\n"), "devices=<count> is missing"},
      {Whole("version=2\ndevices=1\n"), "memory.0 is missing"},
      {Whole("version=2\ndevices=2\nmemory.0=1g\ncores.0=0\nmemory.1=1g\n"), "cores.1 is missing"},
  };
  for (const auto& c : cases) {
    hook_limits limits;
    EXPECT_EQ(hook_limits_parse_file(c.text.c_str(), "limits", &limits), -1) << c.text;
    EXPECT_TRUE(limits.error);
    EXPECT_NE(std::string(limits.message).find(c.message), std::string::npos)
        << c.text << " -> " << limits.message;
  }
}

TEST(LimitsFile, SpillIsPartOfTheLimitAndAbsentMeansNone) {
  hook_limits limits;
  ASSERT_EQ(hook_limits_parse_file(Whole("version=2\ndevices=2\nmemory.0=32Gi\nspill.0=16Gi\n"
                                         "cores.0=0\nmemory.1=8Gi\ncores.1=0\n")
                                       .c_str(),
                                   "limits", &limits),
            0)
      << limits.message;
  EXPECT_EQ(limits.spill[0], 16ull << 30);
  EXPECT_EQ(limits.spill[1], 0u) << "absent: no spilling";
  ASSERT_EQ(hook_limits_parse_file(
                Whole("version=2\ndevices=1\nmemory.0=1g\nspill.0=0\ncores.0=0\n").c_str(),
                "limits", &limits),
            0)
      << limits.message;
  EXPECT_EQ(limits.spill[0], 0u);
  ASSERT_EQ(hook_limits_parse_file(
                Whole("version=2\ndevices=1\nmemory.0=1g\nspill.0=1g\ncores.0=0\n").c_str(),
                "limits", &limits),
            0)
      << "the whole limit may be spilled: " << limits.message;
}

TEST(LimitsFile, RejectsBadSpillValues) {
  struct {
    std::string text;
    const char* message;
  } cases[] = {
      {"version=2\nspill.0=lots\n", "line 2: spill.0=\"lots\": not a number"},
      {"version=2\nspill.0=1.5g\n", "unknown size suffix"},
      {"version=2\nspill.0=-1\n", "spill.0=\"-1\""},
      {"version=2\nspill.0=\n", "empty value"},
      {"version=2\nspill.x=1g\n", "spill.<device index 0-15>"},
      {"version=2\nspill.0=1g\nspill.0=1g\n", "duplicate key \"spill.0\""},
      {Whole("version=2\ndevices=1\nmemory.0=1g\nspill.0=2g\ncores.0=0\n"),
       "spill.0 is above memory.0"},
      {Whole("version=2\ndevices=1\nmemory.0=0\nspill.0=2g\ncores.0=0\n"),
       "spill.0 is set but memory.0 is 0"},
      {Whole("version=2\ndevices=1\nmemory.0=1g\ncores.0=0\nspill.1=1g\n"),
       "device 1 is beyond devices=1"},
      {Whole("version=2\ndevices=1\nmemory.0=1g\ncores.0=0\nspil.0=1g\n"),
       "unknown key \"spil.0\""},
  };
  for (const auto& c : cases) {
    hook_limits limits;
    EXPECT_EQ(hook_limits_parse_file(c.text.c_str(), "limits", &limits), -1) << c.text;
    EXPECT_TRUE(limits.error);
    EXPECT_NE(std::string(limits.message).find(c.message), std::string::npos)
        << c.text << " -> " << limits.message;
  }
}

// The node agent's writer (src/node/allocation_files.cc) and this reader agree.
TEST(LimitsFile, AcceptsWhatTheNodeAgentWrites) {
  hook_limits limits;
  EXPECT_EQ(
      hook_limits_parse_file(
          "version=2\nmode=elastic\ndevices=2\nuuid.0=GPU-a\nmemory.0=4294967296\ncores.0=30\n"
          "uuid.1=GPU-b\nmemory.1=0\ncores.1=0\nregion=/var/run/tessera-region/region\n"
          "end=149\n",
          "limits", &limits),
      0)
      << limits.message;
}

class LimitsLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tessera-limits-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    unsetenv("TESSERA_LIMITS_FILE");
    unsetenv("CUDA_DEVICE_MEMORY_LIMIT");
  }
  void TearDown() override {
    unsetenv("CUDA_DEVICE_MEMORY_LIMIT");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

// Regression (issue 15): the mounted allocation folder without its limits file is an error, not
// the environment's limits.
TEST_F(LimitsLoad, TheAllocationFolderWithoutItsFileIsAnError) {
  setenv("CUDA_DEVICE_MEMORY_LIMIT", "1g", 1);
  hook_limits limits;
  hook_limits_load((dir_ + "/limits").c_str(), &limits);
  EXPECT_TRUE(limits.error);
  EXPECT_NE(std::string(limits.message).find("set up by Tessera"), std::string::npos)
      << limits.message;
  hook_limits_load((dir_ + "/absent/limits").c_str(), &limits);
  EXPECT_FALSE(limits.error) << limits.message;
  EXPECT_EQ(limits.memory[0], 1ull << 30) << "outside a Tessera container the environment counts";
}

TEST_F(LimitsLoad, TheFixedFileWinsOverTheEnvironment) {
  std::string path = dir_ + "/limits";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(Whole("version=2\ndevices=1\nmemory.0=256Mi\ncores.0=0\n").c_str(), f);
  fclose(f);
  setenv("CUDA_DEVICE_MEMORY_LIMIT", "8g", 1);
  hook_limits limits;
  hook_limits_load(path.c_str(), &limits);
  ASSERT_FALSE(limits.error) << limits.message;
  EXPECT_EQ(limits.memory[0], 256ull << 20);
  EXPECT_EQ(limits.memory[1], 0u);
  EXPECT_TRUE(limits.from_fixed_path);
  // What a running process follows (limits_watch.h): the path and the version read.
  EXPECT_EQ(std::string(limits.path), path);
  EXPECT_NE(limits.file_id.ino, 0u);
  EXPECT_EQ(limits.file_id.size, Whole("version=2\ndevices=1\nmemory.0=256Mi\ncores.0=0\n").size());
  setenv("TESSERA_LIMITS_FILE", path.c_str(), 1);
  hook_limits_load((dir_ + "/absent/limits").c_str(), &limits);
  unsetenv("TESSERA_LIMITS_FILE");
  ASSERT_FALSE(limits.error) << limits.message;
  EXPECT_FALSE(limits.from_fixed_path) << "named by the environment";
}

}  // namespace
