#include "child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace tessera::gpu_check {

namespace {

int64_t MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

Status DeadlineExceeded(std::string message) {
  return {StatusCode::kDeadlineExceeded, std::move(message)};
}

int ExitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<Child> Child::StartSelf(const std::vector<std::string>& args) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ErrnoStatus("readlink", "/proc/self/exe", errno);
  self[n] = '\0';
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", "", errno);
  if (pipe2(out, O_CLOEXEC) != 0) {
    int err = errno;
    close(in[0]);
    close(in[1]);
    return ErrnoStatus("pipe2", "", err);
  }
  std::vector<char*> argv;
  std::string arg0 = self;
  argv.push_back(arg0.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork", self, errno);
  if (pid == 0) {
    // dup2 clears FD_CLOEXEC on the new descriptors; the originals close at exec.
    if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0) _exit(127);
    execv(self, argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  Child c;
  c.pid_ = pid;
  c.to_child_ = in[1];
  c.from_child_ = out[0];
  return c;
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_),
      to_child_(other.to_child_),
      from_child_(other.from_child_),
      eof_(other.eof_),
      output_(std::move(other.output_)),
      scanned_(other.scanned_),
      exit_status_(other.exit_status_) {
  other.pid_ = -1;
  other.to_child_ = -1;
  other.from_child_ = -1;
}

Child::~Child() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  if (pid_ > 0 && exit_status_ < 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool Child::ReadSome(int wait_ms) {
  if (eof_) return false;
  pollfd p = {from_child_, POLLIN, 0};
  int ready = poll(&p, 1, wait_ms);
  if (ready <= 0) return true;  // nothing yet (or EINTR): not the end
  char buf[65536];
  ssize_t n = read(from_child_, buf, sizeof(buf));
  if (n > 0) {
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  eof_ = true;
  return false;
}

Status Child::WaitForLine(const std::string& prefix, int64_t deadline_ns) {
  for (;;) {
    size_t line_start = scanned_;
    for (size_t nl; (nl = output_.find('\n', line_start)) != std::string::npos;
         line_start = nl + 1) {
      if (output_.compare(line_start, prefix.size(), prefix) == 0) {
        scanned_ = nl + 1;
        return Status::Ok();
      }
    }
    scanned_ = line_start;
    int64_t left_ms = (deadline_ns - MonotonicNow()) / 1000000;
    if (left_ms <= 0) {
      return DeadlineExceeded("process " + std::to_string(pid_) + " did not say \"" + prefix +
                              "\" in time");
    }
    if (!ReadSome(static_cast<int>(std::min<int64_t>(left_ms, 100)))) {
      return FailedPrecondition("process " + std::to_string(pid_) + " ended before saying \"" +
                                prefix + "\" (see its messages above)");
    }
  }
}

Status Child::WriteLine(const std::string& line) {
  std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(to_child_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus("write to process " + std::to_string(pid_), "", errno);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Child::ReadAllAndWait(std::vector<Child*> children, int64_t deadline_ns) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> open;
    for (Child* c : children) {
      if (c->eof_) continue;
      fds.push_back({c->from_child_, POLLIN, 0});
      open.push_back(c);
    }
    if (open.empty()) break;
    if (MonotonicNow() > deadline_ns) {
      return DeadlineExceeded("a gpu_check worker did not finish in time");
    }
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) open[k]->ReadSome(0);
    }
  }
  for (Child* c : children) {
    int status = 0;
    pid_t got;
    while ((got = waitpid(c->pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    if (got == c->pid_) c->exit_status_ = ExitStatusOf(status);
  }
  return Status::Ok();
}

}  // namespace tessera::gpu_check
