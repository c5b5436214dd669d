#include "demo/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace tessera::demo {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> Environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (extra.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Appends what `fd` has to `r.output`, handing each complete line to `on_line`; `pending` holds
// the start of a line not yet ended. Returns false at the end of the stream.
bool ReadSome(int fd, CommandResult& r, std::string& pending,
              const std::function<void(const std::string&)>& on_line) {
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  r.output.append(buf, static_cast<size_t>(n));
  pending.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
    if (on_line) on_line(pending.substr(0, nl));
  }
  return true;
}

}  // namespace

CommandResult CommandRunner::Run(const std::vector<std::string>& argv,
                                 const CommandOptions& options) {
  CommandResult r;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    r.output = std::string("pipe failed: ") + std::strerror(errno);
    return r;
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> env = Environment(options.env);
  std::vector<char*> arg_p = Pointers(args);
  std::vector<char*> env_p = Pointers(env);
  const pid_t parent = ::getpid();

  pid_t pid = -1;
  int spawn_error = 0;
  {
    // Under the lock, so that a Stop() either refuses this command or sees it running.
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ && !options.survives_stop) {
      spawn_error = ECANCELED;
    } else {
      pid = ::fork();
      if (pid == 0) {
        // The child of a threaded process: only async-signal-safe calls until exec.
        ::setpgid(0, 0);
        // Ends with the demo, even a demo killed with SIGKILL; but the cleanup finishes.
        if (!options.survives_stop) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        struct sigaction dfl = {};
        dfl.sa_handler = SIG_DFL;
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        int null = ::open("/dev/null", O_RDONLY);
        if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(out[1], 2) < 0) {
          ::_exit(127);
        }
        ::execve(arg_p[0], arg_p.data(), env_p.data());
        static const char kFailed[] = "exec failed\n";
        [[maybe_unused]] ssize_t n = ::write(2, kFailed, sizeof(kFailed) - 1);
        ::_exit(127);
      }
      if (pid < 0) {
        spawn_error = errno;
      } else if (!options.survives_stop) {
        stoppable_.insert(pid);
      }
    }
  }
  ::close(out[1]);
  if (spawn_error != 0) {
    ::close(out[0]);
    r.output = spawn_error == ECANCELED
                   ? "not started: the demo is stopping"
                   : "cannot start " + args[0] + ": " + std::strerror(spawn_error);
    return r;
  }

  auto deadline = Clock::now() + options.timeout;
  std::string pending;
  int status = 0;
  bool exited = false;
  bool open = true;
  while (!exited) {
    pollfd p{.fd = out[0], .events = POLLIN, .revents = 0};
    if (open && ::poll(&p, 1, 100) > 0) open = ReadSome(out[0], r, pending, options.on_line);
    if (!open) ::usleep(20000);
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    exited = w == pid || (w < 0 && errno != EINTR);
    if (!exited && Clock::now() > deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
  }
  // What it printed before it ended, unless a process it left behind holds the pipe open.
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  while (open) {
    pollfd p{.fd = out[0], .events = POLLIN, .revents = 0};
    open = ::poll(&p, 1, 0) > 0 && ReadSome(out[0], r, pending, options.on_line);
  }
  ::close(out[0]);
  if (!pending.empty() && options.on_line) options.on_line(pending);
  Forget(pid);
  r.rc = ExitCode(status);
  return r;
}

void CommandRunner::Forget(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  stoppable_.erase(pid);
  ended_.notify_all();
}

void CommandRunner::Stop(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  stopped_ = true;
  std::set<pid_t> running = stoppable_;
  for (pid_t pid : running) ::kill(-pid, SIGTERM);
  auto all_ended = [&] {
    for (pid_t pid : running) {
      if (stoppable_.count(pid) != 0) return false;
    }
    return true;
  };
  if (!ended_.wait_for(lock, grace, all_ended)) {
    for (pid_t pid : running) {
      if (stoppable_.count(pid) != 0) ::kill(-pid, SIGKILL);
    }
    ended_.wait_for(lock, std::chrono::seconds(5), all_ended);
  }
}

bool CommandRunner::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

}  // namespace tessera::demo
