#include "options.h"

#include <gtest/gtest.h>

namespace tessera::gpu_check {
namespace {

TEST(ParseOptionsTest, Accepted) {
  struct Case {
    std::vector<std::string> args;
    void (*check)(const Options&);
  } cases[] = {
      {{"spread"},
       [](const Options& o) {
         EXPECT_EQ(o.mode, "spread");
         EXPECT_EQ(o.device, 0);
         EXPECT_EQ(o.libcuda, "libcuda.so.1");
         EXPECT_EQ(o.libnvml, "libnvidia-ml.so.1");
         EXPECT_FALSE(o.expect);
         EXPECT_FALSE(o.tolerance);
       }},
      {{"share", "--expect", "30", "--tolerance=3", "--seconds", "5", "--variable", "--streams",
        "2", "--name", "share.hard30", "--out", "/tmp/x.json"},
       [](const Options& o) {
         EXPECT_EQ(o.mode, "share");
         EXPECT_EQ(*o.expect, 30);
         EXPECT_EQ(*o.tolerance, 3);
         EXPECT_EQ(o.seconds, 5);
         EXPECT_TRUE(o.variable);
         EXPECT_EQ(o.streams, 2);
         EXPECT_EQ(o.name, "share.hard30");
         EXPECT_EQ(o.out, "/tmp/x.json");
       }},
      {{"share", "--at-least", "90", "--neighbour-intervals", "/tmp/n", "--intervals-out", "/tmp/o",
        "--ready-file", "/tmp/r", "--warmup", "0"},
       [](const Options& o) {
         EXPECT_EQ(*o.at_least, 90);
         EXPECT_EQ(o.neighbour_intervals, "/tmp/n");
         EXPECT_EQ(o.intervals_out, "/tmp/o");
         EXPECT_EQ(o.ready_file, "/tmp/r");
         EXPECT_EQ(o.warmup, 0);
       }},
      {{"worker", "--kernel-us", "2000", "--duty", "0.3", "--device", "1", "--libcuda", "/x.so"},
       [](const Options& o) {
         EXPECT_EQ(o.kernel_us, 2000);
         EXPECT_DOUBLE_EQ(o.duty, 0.3);
         EXPECT_EQ(o.device, 1);
         EXPECT_EQ(o.libcuda, "/x.so");
       }},
      {{"memory", "--limit-gib", "4"}, [](const Options& o) { EXPECT_EQ(o.limit_gib, 4); }},
  };
  for (const Case& c : cases) {
    Result<Options> o = ParseOptions(c.args);
    ASSERT_TRUE(o.ok()) << c.args[0] << ": " << o.status().ToString();
    c.check(*o);
  }
}

TEST(ParseOptionsTest, Refused) {
  struct Case {
    std::vector<std::string> args;
    std::string message_has;
  } cases[] = {
      {{}, "no mode"},
      {{"timeslize"}, "did you mean timeslice?"},
      {{"share", "--expct", "30"}, "did you mean --expect?"},
      {{"share", "--expect"}, "--expect needs a value"},
      {{"share", "--expect", "abc"}, "--expect abc: want a number from 0 to 100"},
      {{"share", "--expect", "130"}, "want a number from 0 to 100"},
      {{"share", "--streams", "3"}, "--streams 3: want a number from 1 to 2"},
      {{"share", "--streams", "1.5"}, "want a whole number"},
      {{"share", "--variable=yes"}, "--variable takes no value"},
      {{"share", "--out", ""}, "--out: empty value"},
      {{"share", "--expect", "30", "--at-least", "90"}, "not both"},
      {{"worker", "--duty", "0"}, "--duty 0: want a number from 0.01 to 1"},
  };
  for (const Case& c : cases) {
    Result<Options> o = ParseOptions(c.args);
    ASSERT_FALSE(o.ok()) << testing::PrintToString(c.args);
    EXPECT_NE(o.status().message().find(c.message_has), std::string::npos) << o.status().message();
  }
}

}  // namespace
}  // namespace tessera::gpu_check
