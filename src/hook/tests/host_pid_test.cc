// The pids file reader of libtessera-cuda.so (src/abi/host_pids.h).
#include <stdlib.h>
#include <unistd.h>

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

// The compute limiter's loop maps the region's PIDs through the pids file.
TEST(HostPids, MapsAllOrSaysWhichCaseItIs) {
  char path[] = "/tmp/tessera-pids-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "version=1\n4242 7\n5000 12\n";
  ASSERT_EQ(write(fd, text, sizeof(text) - 1), static_cast<ssize_t>(sizeof(text) - 1));
  close(fd);
  const pid_t pids[] = {12, 7};
  pid_t hosts[2] = {0, 0};

  unsetenv("TESSERA_PIDS_FILE");
  EXPECT_EQ(hook_host_pids(pids, 2, hosts), 0) << "no pids file: the PIDs are the host's";
  EXPECT_EQ(hosts[0], 12);
  EXPECT_EQ(hosts[1], 7);

  setenv("TESSERA_PIDS_FILE", path, 1);
  EXPECT_EQ(hook_host_pids(pids, 2, hosts), 1);
  EXPECT_EQ(hosts[0], 5000);
  EXPECT_EQ(hosts[1], 4242);
  const pid_t unlisted[] = {7, 8};
  EXPECT_EQ(hook_host_pids(unlisted, 2, hosts), -1) << "PID 8 is younger than the file";

  unsetenv("TESSERA_PIDS_FILE");
  unlink(path);
}
