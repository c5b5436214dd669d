#include "worker_output.h"

#include <gtest/gtest.h>

namespace tessera::gpu_check {
namespace {

TEST(WorkerOutputTest, RoundTrip) {
  WorkerOutput w;
  w.pid = 4242;
  w.before = {{1000, 1700000000000000000, 2000}, {3000, 1700000000000002500, 3900}};
  w.after = {{9000, 1700000000000008500, 9100}};
  w.intervals = {{1700000000000003000, 1700000000000003050}, {-5, 7}};
  w.gaps = {{1700000000000003010, 1700000000000003020}};
  w.missing = 2;
  std::string text = FormatWorkerOutput(w);
  EXPECT_EQ(text.substr(0, 9), "pid 4242\n");
  Result<WorkerOutput> back = ParseWorkerOutput("ready 4242\n" + text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pid, 4242);
  ASSERT_EQ(back->before.size(), 2u);
  EXPECT_EQ(back->before[1].device_ns, 1700000000000002500);
  EXPECT_EQ(back->before[1].host_after_ns, 3900);
  ASSERT_EQ(back->after.size(), 1u);
  EXPECT_EQ(back->intervals, w.intervals);
  EXPECT_EQ(back->gaps, w.gaps);
  EXPECT_EQ(back->missing, 2u);
}

TEST(WorkerOutputTest, Refused) {
  struct Case {
    std::string text;
    std::string message_has;
  } cases[] = {
      {"", "no \"done\""},
      {"pid 1\ni 1 2\n", "no \"done\""},
      {"pid 1\ni 1\ndone\n", "line 2 \"i 1\": unknown line"},
      {"pid 1\ni 5 2\ndone\n", "ends before it starts"},
      {"pid 1\ng 5 2\ndone\n", "ends before it starts"},
      {"pid x\ndone\n", "line 1 \"pid x\": not a whole number"},
      {"pid 1\nclock2 1 2 3\ndone\n", "unknown line"},
      {"done\ni 1 2\n", "text after \"done\""},
  };
  for (const Case& c : cases) {
    Result<WorkerOutput> w = ParseWorkerOutput(c.text);
    ASSERT_FALSE(w.ok()) << c.text;
    EXPECT_NE(w.status().message().find(c.message_has), std::string::npos) << w.status().message();
  }
}

}  // namespace
}  // namespace tessera::gpu_check
