// A child process of gpu_check (this program run again, as `gpu_check worker ...`) with pipes
// to its stdin and from its stdout; its stderr is gpu_check's. Thread-compatible.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::gpu_check {

class Child {
 public:
  // Starts /proc/self/exe with `args` (argv[1..]); the environment is inherited (LD_PRELOAD
  // and limits included).
  static Result<Child> StartSelf(const std::vector<std::string>& args);

  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();  // kills and reaps a child still running

  pid_t pid() const { return pid_; }

  // Reads until a line starting with `prefix` (kept in output(), like everything read);
  // DeadlineExceeded at CLOCK_MONOTONIC `deadline_ns`, FailedPrecondition at end of file.
  Status WaitForLine(const std::string& prefix, int64_t deadline_ns);
  // Writes `line` and a newline to its stdin.
  Status WriteLine(const std::string& line);
  // Everything it wrote until it closed its stdout, then its exit status (waitpid).
  static Status ReadAllAndWait(std::vector<Child*> children, int64_t deadline_ns);

  const std::string& output() const { return output_; }
  int exit_status() const { return exit_status_; }  // -1 until reaped; 128 + signal if killed

 private:
  Child() = default;
  // Reads what is there (or waits up to `wait_ms` for it); false at end of file.
  bool ReadSome(int wait_ms);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool eof_ = false;
  std::string output_;
  size_t scanned_ = 0;  // output_ before this holds no wanted line
  int exit_status_ = -1;
};

}  // namespace tessera::gpu_check
