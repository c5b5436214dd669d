#include "driver_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "clock.h"

namespace simgpu {
namespace {

constexpr uint64_t kHelloTimeoutNs = 5'000'000'000;

tessera::Status NotServed(const std::string& path, const std::string& why) {
  return tessera::FailedPrecondition(
      "the simgpu driver daemon does not answer on " + path + " (" + why +
      "); start `simgpu driver` for this SIMGPU_STATE on the host, or remove the stale socket");
}

// Reads one line (without its newline) from `fd` into *line, waiting 5 s at most. Says what went
// wrong, or returns "".
std::string ReadLine(int fd, std::string* line) {
  uint64_t deadline = NowNs() + kHelloTimeoutNs;
  while (line->find('\n') == std::string::npos && line->size() < 256) {
    uint64_t now = NowNs();
    if (now >= deadline) return "no answer within 5 s";
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>((deadline - now) / 1'000'000 + 1)) < 0 && errno != EINTR) {
      return std::string("poll: ") + strerror(errno);
    }
    if (p.revents == 0) continue;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return "it closed the connection: is it in the host PID namespace?";
    if (n < 0 && errno != EINTR) return std::string("read: ") + strerror(errno);
    if (n > 0) line->append(buf, static_cast<size_t>(n));
  }
  line->resize(std::min(line->size(), line->find('\n')));
  return "";
}

// Connects to `path` and reads the daemon's answer line into *id; the connection's fd in *fd.
tessera::Status Dial(const std::string& path, int* fd, HostIdentity* id) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return NotServed(path, "socket path too long");
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return NotServed(path, strerror(errno));
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(s);
    return NotServed(path, std::string("connect: ") + strerror(err));
  }
  std::string line;
  std::string error = ReadLine(s, &line);
  if (error.empty() && !ParseDriverHello(line, id)) error = "unexpected answer '" + line + "'";
  if (!error.empty()) {
    close(s);
    return NotServed(path, error);
  }
  *fd = s;
  return tessera::Status::Ok();
}

}  // namespace

std::string FormatDriverHello(const HostIdentity& id) {
  char line[96];
  snprintf(line, sizeof(line), "simgpu-driver 1 pid=%d start=%" PRIu64 "\n", id.pid, id.start_time);
  return line;
}

bool ParseDriverHello(std::string_view line, HostIdentity* id) {
  std::string text(line.substr(0, line.find('\n')));
  int pid = 0;
  uint64_t start = 0;
  int used = 0;
  if (sscanf(text.c_str(), "simgpu-driver 1 pid=%d start=%" SCNu64 "%n", &pid, &start, &used) !=
          2 ||
      static_cast<size_t>(used) != text.size() || pid <= 0) {
    return false;
  }
  *id = HostIdentity{pid, start};
  return true;
}

tessera::Result<std::unique_ptr<DriverLink>> DriverLink::Connect(const std::string& socket_path) {
  std::unique_ptr<DriverLink> link(new DriverLink(socket_path));
  HostIdentity id;
  RETURN_IF_ERROR(Dial(socket_path, &link->fd_, &id));
  link->pid_.store(id.pid);
  link->start_.store(id.start_time);
  link->local_pid_.store(getpid(), std::memory_order_release);
  return link;
}

DriverLink::~DriverLink() {
  if (fd_ >= 0) close(fd_);
}

void DriverLink::Refresh() {
  int me = getpid();
  if (local_pid_.load(std::memory_order_acquire) == me) return;
  std::lock_guard<std::mutex> guard(mu_);
  if (local_pid_.load(std::memory_order_relaxed) == me) return;
  if (fd_ >= 0) close(fd_);  // the parent's, inherited: the parent keeps its own copy
  fd_ = -1;
  HostIdentity id;
  if (tessera::Status st = Dial(path_, &fd_, &id); !st.ok()) {
    fprintf(stderr, "simgpu: %s\n", st.message().c_str());
    id = HostIdentity{};
  }
  pid_.store(id.pid, std::memory_order_relaxed);
  start_.store(id.start_time, std::memory_order_relaxed);
  local_pid_.store(me, std::memory_order_release);  // also after a failure: say it only once
}

HostIdentity DriverLink::identity() const {
  return HostIdentity{pid_.load(std::memory_order_relaxed), start_.load(std::memory_order_relaxed)};
}

void DriverLink::CloseInForkedChild() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  local_pid_.store(0);
}

}  // namespace simgpu
