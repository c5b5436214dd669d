#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tessera::hooktest {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Forks and execs; returns the pid and the read ends of stdout/stderr pipes. Without `err_fd`,
// stderr is /dev/null (a pipe nobody reads would kill the child with SIGPIPE when it writes).
pid_t Spawn(const std::vector<std::string>& argv, const Env& env, int* out_fd, int* err_fd) {
  int out_pipe[2], err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
  if (err_fd != nullptr && pipe2(err_pipe, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = EnvStrings(env);
  std::vector<char*> arg_ptrs = Pointers(args);
  std::vector<char*> env_ptrs = Pointers(envs);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_fd != nullptr ? err_pipe[1] : open("/dev/null", O_WRONLY), 2);
    execve(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
    _exit(127);
  }
  close(out_pipe[1]);
  *out_fd = out_pipe[0];
  if (err_fd != nullptr) {
    close(err_pipe[1]);
    *err_fd = err_pipe[0];
  }
  return pid;
}

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::vector<std::string> EnvStrings(const Env& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string RunResult::Describe() const {
  return "exit " + std::to_string(exit_code) + (timed_out ? " (timed out)" : "") +
         "\n--- stdout\n" + out + "--- stderr\n" + err +
         (stuck.empty() ? "" : "--- threads\n" + stuck);
}

namespace {

// RunProgram; a child past its deadline is described only when `describe` (not gdb itself).
RunResult Run(const std::vector<std::string>& argv, const Env& env,
              std::chrono::milliseconds timeout, bool describe) {
  RunResult result;
  int out_fd, err_fd;
  pid_t pid = Spawn(argv, env, &out_fd, &err_fd);
  if (pid < 0) {
    result.err = "spawn failed";
    return result;
  }
  auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      if (describe) result.stuck = ThreadsOf(pid);
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (auto& fd : fds) {
      if (fd.fd < 0 || !(fd.revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t n = read(fd.fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fd.fd);
        fd.fd = -1;
        --open_fds;
        continue;
      }
      (fd.fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(n));
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = result.timed_out ? -1 : ExitCode(status);
  return result;
}

}  // namespace

std::string ThreadsOf(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::string out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    const std::string dir = entry.path().string();
    std::string stat = ReadSmall(dir + "/stat");  // "tid (comm) S ...": the state after ')'
    auto close = stat.rfind(')');
    char state = close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
    out += "thread " + entry.path().filename().string() + " (" + ReadSmall(dir + "/comm") +
           ") state " + state + ", wchan " + ReadSmall(dir + "/wchan") + ", syscall " +
           ReadSmall(dir + "/syscall") + "\n";
  }
  if (ec) return "cannot list " + task + ": " + ec.message() + "\n";
  if (access("/usr/bin/gdb", X_OK) == 0) {
    RunResult gdb =
        Run({"/usr/bin/gdb", "-p", std::to_string(pid), "-batch", "-ex", "thread apply all bt"},
            {{"PATH", "/usr/bin:/bin"}}, std::chrono::seconds(30), false);
    out += gdb.out;
  }
  return out;
}

RunResult RunProgram(const std::vector<std::string>& argv, const Env& env,
                     std::chrono::milliseconds timeout) {
  return Run(argv, env, timeout, true);
}

Child::Child(const std::vector<std::string>& argv, const Env& env) {
  pid_ = Spawn(argv, env, &out_fd_, nullptr);  // stderr is not needed
}

Child::~Child() {
  if (pid_ > 0) KillAndReap(SIGKILL);
  if (out_fd_ >= 0) close(out_fd_);
}

bool Child::WaitForLine(const std::string& line, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (buffer_.find(line + "\n") == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fd = {out_fd_, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[1024];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
  }
  return true;
}

std::optional<std::string> Child::LineStartingWith(const std::string& prefix,
                                                   std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    for (size_t at = 0, end; (end = buffer_.find('\n', at)) != std::string::npos; at = end + 1) {
      if (buffer_.compare(at, prefix.size(), prefix) == 0) {
        return buffer_.substr(at + prefix.size(), end - at - prefix.size());
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd fd = {out_fd_, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[1024];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::string Child::ReadAll(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd fd = {out_fd_, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[1024];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    buffer_.append(buf, static_cast<size_t>(n));
  }
  return buffer_;
}

int Child::KillAndReap(int signal) {
  int status = 0;
  if (pid_ <= 0) return status;
  kill(pid_, signal);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

int Child::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  int status = 0;
  while (Clock::now() < deadline) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return ExitCode(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

}  // namespace tessera::hooktest
