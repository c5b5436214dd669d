#include "demo/process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace tessera::demo {
namespace {

std::atomic<pid_t> group_id{0};

void KillGroupAndExit(int sig) {
  pid_t pgid = group_id.load();
  if (pgid > 0) {
    ::kill(-pgid, SIGKILL);
    // Reap the direct children (they die at once), so that none is left as a zombie.
    while (::waitpid(-pgid, nullptr, 0) > 0 || errno == EINTR) {
    }
  }
  _exit(128 + sig);
}

}  // namespace

ProcessGroup::~ProcessGroup() {
  StopAll();
}

Result<pid_t> ProcessGroup::Spawn(const std::vector<std::string>& argv,
                                  const std::map<std::string, std::string>& env,
                                  const std::string& log_file) {
  int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Internal("cannot open " + log_file + ": " + std::strerror(errno));
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (env.count(key) == 0) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pgid = group_id.load();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return Internal("cannot start " + argv[0] + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, pgid);  // 0: this child leads a new group
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);  // the demo died before prctl took effect
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execve(args[0], args.data(), envp.data());
    std::string msg = "exec " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  ::close(log_fd);
  // Set the group from the parent too, so it is in place before anyone signals it.
  ::setpgid(pid, pgid == 0 ? pid : pgid);
  if (pgid == 0) group_id.store(pid);
  children_.push_back(pid);
  return pid;
}

bool ProcessGroup::Alive(pid_t pid) {
  int status;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  return r == 0;
}

void ProcessGroup::StopAll(std::chrono::milliseconds grace) {
  pid_t pgid = group_id.exchange(0);
  if (pgid <= 0) return;
  ::kill(-pgid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::kill(-pgid, 0) != 0 && errno == ESRCH) break;  // nothing of the group is left
    // Reap exited children so that they do not count as members.
    while (::waitpid(-pgid, nullptr, WNOHANG) > 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pgid, SIGKILL);
  for (pid_t p : children_) ::waitpid(p, nullptr, 0);
  children_.clear();
}

void ProcessGroup::InstallSignalCleanup() {
  struct sigaction sa = {};
  sa.sa_handler = KillGroupAndExit;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

}  // namespace tessera::demo
