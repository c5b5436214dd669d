// The pids file reader of libtessera-cuda.so (src/abi/host_pids.h).
#include <gtest/gtest.h>

extern "C" {
#include "hook/host_pid.h"
}

TEST(HostPidParse, FindsTheHostPidOfTheProcess) {
  const char* text = "version=1\n4242 7\n5000 12\n";
  EXPECT_EQ(host_pid_parse(text, 7), 4242);
  EXPECT_EQ(host_pid_parse(text, 12), 5000);
}

TEST(HostPidParse, AProcessNotListedIsUnknown) {
  EXPECT_EQ(host_pid_parse("version=1\n4242 7\n", 8), 0);
  EXPECT_EQ(host_pid_parse("version=1\n", 8), 0);
  EXPECT_EQ(host_pid_parse("version=1\n4242 7", 7), 4242);  // no final newline
}

TEST(HostPidParse, OtherVersionsAndMalformedLinesAreRefused) {
  EXPECT_EQ(host_pid_parse("version=2\n4242 7\n", 7), -1);
  EXPECT_EQ(host_pid_parse("", 7), -1);
  EXPECT_EQ(host_pid_parse("version=1\n4242\n", 7), -1);
  EXPECT_EQ(host_pid_parse("version=1\n4242 x\n", 7), -1);
  EXPECT_EQ(host_pid_parse("version=1\n4242  7\n", 7), -1);
  EXPECT_EQ(host_pid_parse("version=1\n99999999999 7\n", 7), -1);
  EXPECT_EQ(host_pid_parse("version=1\n0 7\n", 7), -1);
}
