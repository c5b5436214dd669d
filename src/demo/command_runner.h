// CommandRunner: runs the programs the demo calls (the dev cluster's script, kubectl), each in a
// process group of its own, and collects what it prints (stdout and stderr together, optionally
// line by line as it comes). A command dies with the demo (PR_SET_PDEATHSIG), even with a demo
// killed by SIGKILL, unless it is marked `survives_stop`, which always runs to its end.
// Stop() refuses every later command but those marked `survives_stop`, sends SIGTERM to the
// process group of each running one, waits for them to end and sends SIGKILL after the grace
// period. Thread-safety: Run and Stop may be called from any thread, at the same time.
//
//   CommandRunner runner;
//   CommandResult r = runner.Run({"/path/kubectl", "get", "pods"}, {.env = {{"KUBECONFIG", f}}});
//   if (r.rc == 0) Use(r.output);
//
// Why process groups, and what a stop does to `up` and `down`: docs/demo.md, "How it is wired".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tessera::demo {

struct CommandResult {
  // The exit status; 128 + N when signal N ended it; -1 when it did not start (the message is in
  // `output`), or when the runner was stopped before it could.
  int rc = -1;
  std::string output;
  bool timed_out = false;
};

struct CommandOptions {
  std::map<std::string, std::string> env;  // set on top of the demo's environment
  // Called with each line (without its newline) as the command prints it.
  std::function<void(const std::string&)> on_line;
  // SIGKILL to its process group when it runs longer (rc 137, timed_out).
  std::chrono::seconds timeout{60};
  // Runs after Stop() too; neither Stop() nor the demo's death ends it.
  bool survives_stop = false;
};

class CommandRunner {
 public:
  CommandRunner() = default;
  CommandRunner(const CommandRunner&) = delete;
  CommandRunner& operator=(const CommandRunner&) = delete;

  // Runs argv (argv[0] a path) with stdin from /dev/null until it exits.
  CommandResult Run(const std::vector<std::string>& argv, const CommandOptions& options = {});

  // See the top. Returns once every command it ended has been reaped.
  void Stop(std::chrono::milliseconds grace);

  bool stopped() const;

 private:
  void Forget(pid_t pid);

  mutable std::mutex mu_;
  std::condition_variable ended_;
  bool stopped_ = false;       // guarded by mu_
  std::set<pid_t> stoppable_;  // guarded by mu_: running commands Stop() ends
};

}  // namespace tessera::demo
