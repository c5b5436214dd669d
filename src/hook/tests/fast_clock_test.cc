// fast_now_ns (the compute limiter's launch clock) against clock_gettime(CLOCK_MONOTONIC).
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

extern "C" {
#include "hook/fast_clock.h"
}

namespace {

// A counter reading may be off by the anchor's error (a fraction of a microsecond) plus the rate's
// error over one anchor period (about as much) plus NTP's slew (0.5 us a millisecond).
constexpr uint64_t kToleranceNs = 5000;

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool KernelUsesTheCounter() {
#if defined(__x86_64__)
  FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char source[64] = "";
  bool tsc = std::fgets(source, sizeof(source), f) != nullptr && std::strcmp(source, "tsc\n") == 0;
  std::fclose(f);
  return tsc;
#else
  return false;
#endif
}

// Reads the clock between two clock_gettime calls for `ms` milliseconds (many anchor periods);
// returns how many readings fell outside [before - tolerance, after + tolerance].
int OutsideBrackets(int ms, std::string* first) {
  int outside = 0;
  uint64_t end = MonotonicNs() + static_cast<uint64_t>(ms) * 1000000ull;
  for (uint64_t before = MonotonicNs(); before < end; before = MonotonicNs()) {
    uint64_t reading = fast_now_ns();
    uint64_t after = MonotonicNs();
    if (reading + kToleranceNs < before || reading > after + kToleranceNs) {
      if (outside++ == 0) {
        *first = std::to_string(before) + " <= " + std::to_string(reading) +
                 " <= " + std::to_string(after) + " is off by more than 5 us";
      }
    }
  }
  return outside;
}

class FastClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fast_clock_reset_in_child();  // a fresh start for every test
    fast_clock_init();
  }
};

TEST_F(FastClockTest, UsesTheCounterWhereTheKernelDoes) {
  EXPECT_EQ(fast_clock_uses_counter() != 0, KernelUsesTheCounter());
}

TEST_F(FastClockTest, ReadingsStayWithinMicrosecondsOfClockGettime) {
  std::string first;
  EXPECT_EQ(OutsideBrackets(300, &first), 0) << first;
  if (fast_clock_uses_counter()) {
    EXPECT_NE(fast_clock_anchor.mult, 0u) << "the counter's rate was never measured";
  }
}

TEST_F(FastClockTest, ThreadsReadingTogetherStayWithinMicroseconds) {
  std::vector<int> outside(4);
  std::vector<std::string> first(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { outside[i] = OutsideBrackets(300, &first[i]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(outside[i], 0) << "thread " << i << ": " << first[i];
}

TEST_F(FastClockTest, ChildAfterForkStartsOverAndStaysAccurate) {
  std::string first;
  ASSERT_EQ(OutsideBrackets(20, &first), 0) << first;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    fast_clock_reset_in_child();
    std::string child_first;
    _exit(OutsideBrackets(100, &child_first) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
