// Running the hook's test programs: child processes with an exact environment, captured output,
// and a deadline. Thread-safety: none needed (tests run single-threaded).
#ifndef TESSERA_HOOK_TESTS_PROCESS_H_
#define TESSERA_HOOK_TESTS_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::hooktest {

using Env = std::map<std::string, std::string>;

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal or the deadline
  bool timed_out = false;
  std::string out;
  std::string err;
  std::string stuck;  // where a timed-out child's threads were (ThreadsOf), for the failure
  std::string Describe() const;
};

// Runs argv[0] (a path) with exactly `env`, waits at most `timeout`; a child still running then
// has its threads described (ThreadsOf) and is killed.
RunResult RunProgram(const std::vector<std::string>& argv, const Env& env,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A child left running; its stdout is readable line by line.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const Env& env);
  ~Child();  // kills and reaps the child if it still runs
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stdout until `line` appears or `timeout` passes; true when it appeared.
  bool WaitForLine(const std::string& line, std::chrono::milliseconds timeout);
  // Reads stdout until a whole line that begins with `prefix` is there, or `timeout` passes;
  // returns the first such line without the prefix, or std::nullopt.
  std::optional<std::string> LineStartingWith(const std::string& prefix,
                                              std::chrono::milliseconds timeout);
  // Reads stdout until the child closes it (at most `timeout`); returns all it wrote.
  std::string ReadAll(std::chrono::milliseconds timeout);
  // Sends `signal` and reaps the child; returns the wait status.
  int KillAndReap(int signal);
  // Waits for the child to exit (at most `timeout`); returns the exit code or -1.
  int Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

// Where each thread of running process `pid` is: its name, state, kernel wait channel and system
// call from /proc, and the threads' stacks when gdb is installed. A hang that happens once in many
// runs (a worker of the churn test in CI) can then be told from a slow machine.
std::string ThreadsOf(pid_t pid);

// Builds a NULL-terminated "K=V" list.
std::vector<std::string> EnvStrings(const Env& env);

}  // namespace tessera::hooktest

#endif  // TESSERA_HOOK_TESTS_PROCESS_H_
