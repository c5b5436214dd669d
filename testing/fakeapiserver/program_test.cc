// The tessera-fake-apiserver program: first line, serving, clean exit on SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fakeapiserver/test_client.h"

#include <gtest/gtest.h>

namespace tessera::testing {
namespace {

// Reads one line from `fd`, waiting at most `ms` in all.
std::string ReadLine(int fd, int ms) {
  std::string line;
  char c;
  while (ms > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) {
      ms -= 100;
      continue;
    }
    if (read(fd, &c, 1) != 1 || c == '\n') break;
    line.push_back(c);
  }
  return line;
}

TEST(FakeApiServerProgramTest, PrintsItsUrlServesAndStopsOnSigterm) {
  const char* build = std::getenv("TESSERA_BUILD_DIR");
  ASSERT_NE(build, nullptr) << "TESSERA_BUILD_DIR is not set (CTest sets it)";
  std::string program = std::string(build) + "/bin/tessera-fake-apiserver";
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  char* argv[] = {program.data(), const_cast<char*>("--listen"), const_cast<char*>("127.0.0.1:0"),
                  nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ), 0) << program;
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);

  std::string line = ReadLine(out[0], 20000);
  const std::string prefix = "listening on http://127.0.0.1:";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << "first line: " << line;
  TestClient client(line.substr(std::string("listening on ").size()));
  EXPECT_EQ(client.Get("/api/v1/namespaces/default").status, 200);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 200 && done == 0; ++i) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) usleep(50000);
  }
  if (done == 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
  close(out[0]);
  ASSERT_EQ(done, pid) << "did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(FakeApiServerProgramTest, UnknownFlagIsAUsageError) {
  const char* build = std::getenv("TESSERA_BUILD_DIR");
  ASSERT_NE(build, nullptr);
  std::string command =
      std::string(build) + "/bin/tessera-fake-apiserver --bogus 1 > /dev/null 2>&1";
  int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace tessera::testing
