// The test programs' runner: a child past its deadline is killed and described, thread by thread,
// so that a rare hang in CI says where it was.
#include "process.h"

#include <gtest/gtest.h>

namespace tessera::hooktest {
namespace {

const Env kEnv = {{"PATH", "/usr/bin:/bin"}};

TEST(RunProgram, DescribesAChildPastItsDeadlineAndKillsIt) {
  auto start = std::chrono::steady_clock::now();
  RunResult r = RunProgram({"/bin/sleep", "30"}, kEnv, std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(29)) << "not killed";
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_NE(r.stuck.find("(sleep) state S, wchan "), std::string::npos) << r.stuck;
  EXPECT_NE(r.Describe().find("--- threads\n"), std::string::npos) << r.Describe();
}

TEST(RunProgram, DescribesNothingOfAChildThatExits) {
  RunResult r = RunProgram({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, kEnv);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.stuck, "");
  EXPECT_EQ(r.Describe().find("--- threads"), std::string::npos);
}

}  // namespace
}  // namespace tessera::hooktest
