#include "driver_daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "clock.h"

namespace simgpu {
namespace {

constexpr uint64_t kSweepEveryNs = 1'000'000'000;

struct Client {
  int fd;
  HostIdentity id;
};

sockaddr_un SocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  return addr;
}

// The listening socket at `path`, replacing a stale one; -1 (said on stderr) when another daemon
// answers there or the socket cannot be made.
int Listen(const std::string& path) {
  sockaddr_un addr = SocketAddress(path);
  if (path.size() >= sizeof(addr.sun_path)) {
    fprintf(stderr, "simgpu driver: socket path %s is too long\n", path.c_str());
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    fprintf(stderr, "simgpu driver: socket: %s\n", strerror(errno));
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    fprintf(stderr, "simgpu driver: another daemon serves %s\n", path.c_str());
    close(fd);
    return -1;
  }
  close(fd);
  unlink(path.c_str());  // stale: nothing answers there
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(path.c_str(), 0666) != 0 || listen(fd, SOMAXCONN) != 0) {
    fprintf(stderr, "simgpu driver: cannot listen on %s: %s\n", path.c_str(), strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

class Daemon {
 public:
  explicit Daemon(SharedState& state) : state_(state) {}

  // Answers the peer with its host identity and tracks the connection until it closes.
  void Accept(int listen_fd) {
    while (true) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;  // EAGAIN: no more pending; other errors: the peer is gone already
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) {
        // pid 0: the peer's PID namespace is not below ours, we cannot know who it is.
        fprintf(stderr, "simgpu driver: refused a peer whose PID this daemon cannot see\n");
        close(fd);
        continue;
      }
      HostIdentity id{cred.pid, ProcessStartTime(cred.pid)};
      std::string hello = FormatDriverHello(id);
      if (send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(hello.size())) {
        close(fd);
        continue;
      }
      clients_.push_back(Client{fd, id});
      int open = ++connections_[{id.pid, id.start_time}];
      fprintf(stderr, "simgpu driver: pid %d connected (start time %" PRIu64 ", %d connection%s)\n",
              id.pid, id.start_time, open, open == 1 ? "" : "s");
    }
  }

  // Reads what client `i` sent (nothing is expected); drops it when its connection has closed.
  void Serve(size_t i) {
    char buf[64];
    ssize_t n = read(clients_[i].fd, buf, sizeof(buf));
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) return;
    Client c = clients_[i];
    clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
    close(c.fd);
    int left = --connections_[{c.id.pid, c.id.start_time}];
    uint64_t freed = 0;
    if (left == 0) {
      connections_.erase({c.id.pid, c.id.start_time});
      SharedState::Lock lock(state_);
      freed = state_.ReleaseProcess(lock, c.id.pid, c.id.start_time);
    }
    fprintf(stderr,
            "simgpu driver: pid %d disconnected (%d connection%s left, %" PRIu64 " bytes freed)\n",
            c.id.pid, left, left == 1 ? "" : "s", freed);
  }

  void Sweep() {
    SharedState::Lock lock(state_);
    state_.Sweep(lock, SharedState::SweepMode::kFull);
  }

  const std::vector<Client>& clients() const { return clients_; }

  void CloseAll() {
    for (const Client& c : clients_) close(c.fd);
    clients_.clear();
  }

 private:
  SharedState& state_;
  std::vector<Client> clients_;
  std::map<std::pair<int, uint64_t>, int> connections_;  // open connections per process
};

}  // namespace

int RunDriverDaemon(SharedState& state) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  int signal_fd = signalfd(-1, &stop, SFD_CLOEXEC);
  std::string path = state.directory() + "/" + kDriverSocketName;
  int listen_fd = signal_fd < 0 ? -1 : Listen(path);
  if (listen_fd < 0) {
    if (signal_fd < 0) fprintf(stderr, "simgpu driver: signalfd: %s\n", strerror(errno));
    return 1;
  }
  fprintf(stderr, "simgpu driver: serving %s\n", path.c_str());

  Daemon daemon(state);
  daemon.Sweep();
  uint64_t next_sweep = NowNs() + kSweepEveryNs;
  std::vector<pollfd> fds;
  int status = 0;
  while (true) {
    fds.assign({{signal_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}});
    for (const Client& c : daemon.clients()) fds.push_back({c.fd, POLLIN, 0});
    uint64_t now = NowNs();
    int wait_ms = now < next_sweep ? static_cast<int>((next_sweep - now) / 1'000'000 + 1) : 0;
    if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
      fprintf(stderr, "simgpu driver: poll: %s\n", strerror(errno));
      status = 1;
      break;
    }
    if (fds[0].revents != 0) break;  // SIGTERM or SIGINT
    // Clients first, last to first: Serve() may drop the one it reads, Accept() only appends.
    for (size_t i = fds.size() - 1; i >= 2; --i) {
      if (fds[i].revents != 0) daemon.Serve(i - 2);
    }
    if (fds[1].revents != 0) daemon.Accept(listen_fd);
    if (NowNs() >= next_sweep) {
      daemon.Sweep();
      next_sweep = NowNs() + kSweepEveryNs;
    }
  }
  unlink(path.c_str());
  close(listen_fd);
  daemon.CloseAll();
  close(signal_fd);
  fprintf(stderr, "simgpu driver: stopped\n");
  return status;
}

}  // namespace simgpu
