#include "rendezvous.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace tessera::replay {

namespace {

constexpr size_t kMaxMessage = 1 << 20;
constexpr size_t kMaxFds = 200;  // within the kernel's SCM_MAX_FD (253)
enum : uint32_t { kGather = 1, kReport = 2 };

// One SOCK_SEQPACKET message: [type][payload] with descriptors attached.
bool SendMessage(int fd, uint32_t type, const std::string& payload, const std::vector<int>& fds) {
  if (fds.size() > kMaxFds) return false;
  std::string frame(sizeof(type), '\0');
  std::memcpy(frame.data(), &type, sizeof(type));
  frame += payload;
  iovec iov{frame.data(), frame.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(fd, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(frame.size());
}

bool ReceiveMessage(int fd, uint32_t* type, std::string* payload, std::vector<int>* fds) {
  std::string frame(kMaxMessage, '\0');
  iovec iov{frame.data(), frame.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  if (n < static_cast<ssize_t>(sizeof(*type)) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    return false;
  }
  std::memcpy(type, frame.data(), sizeof(*type));
  payload->assign(frame.data() + sizeof(*type), static_cast<size_t>(n) - sizeof(*type));
  fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* data = reinterpret_cast<const int*>(CMSG_DATA(c));
    fds->insert(fds->end(), data, data + count);
  }
  return true;
}

void AppendU32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

uint32_t TakeU32(const std::string& in, size_t* at) {
  uint32_t v = 0;
  if (*at + sizeof(v) > in.size()) throw std::runtime_error("rendezvous: short message");
  std::memcpy(&v, in.data() + *at, sizeof(v));
  *at += sizeof(v);
  return v;
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

}  // namespace

std::vector<std::string> Rank::AllGather(const std::string& blob, const std::vector<int>& fds,
                                         std::vector<std::vector<int>>* fds_out) {
  if (!SendMessage(fd_, kGather, blob, fds)) throw std::runtime_error("rendezvous: send failed");
  uint32_t type = 0;
  std::string reply;
  std::vector<int> received;
  if (!ReceiveMessage(fd_, &type, &reply, &received) || type != kGather) {
    throw std::runtime_error("rendezvous: the hub is gone");
  }
  // Reply: per rank [blob length][descriptor count][blob]; descriptors attached in rank order.
  std::vector<std::string> blobs;
  size_t at = 0, next_fd = 0;
  if (fds_out != nullptr) fds_out->assign(static_cast<size_t>(size_), {});
  for (int r = 0; r < size_; ++r) {
    uint32_t length = TakeU32(reply, &at);
    uint32_t count = TakeU32(reply, &at);
    if (at + length > reply.size() || next_fd + count > received.size()) {
      throw std::runtime_error("rendezvous: malformed reply");
    }
    blobs.emplace_back(reply.substr(at, length));
    at += length;
    for (uint32_t i = 0; i < count; ++i, ++next_fd) {
      if (fds_out != nullptr) {
        (*fds_out)[static_cast<size_t>(r)].push_back(received[next_fd]);
      } else {
        close(received[next_fd]);
      }
    }
  }
  return blobs;
}

void Rank::Report(const std::string& result) {
  SendMessage(fd_, kReport, result, {});
}

std::vector<RankResult> RunRanks(int size, const std::function<int(Rank&)>& body) {
  std::vector<RankResult> results(static_cast<size_t>(size));
  std::vector<int> hub_fds;
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      throw std::runtime_error("rendezvous: socketpair failed");
    }
    pid_t pid = fork();
    if (pid == 0) {
      for (int fd : hub_fds) close(fd);
      close(pair[0]);
      Rank rank(r, size, pair[1]);
      int rc = 1;
      try {
        rc = body(rank);
      } catch (const std::exception& e) {
        fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      _exit(rc);
    }
    close(pair[1]);
    hub_fds.push_back(pair[0]);
    pids.push_back(pid);
  }
  bool failed = false;
  for (bool reported = false; !reported && !failed;) {
    std::string reply;
    std::vector<int> fds;
    int gathered = 0;
    for (int r = 0; r < size && !failed; ++r) {
      uint32_t type = 0;
      std::string payload;
      std::vector<int> received;
      if (!ReceiveMessage(hub_fds[static_cast<size_t>(r)], &type, &payload, &received)) {
        failed = true;  // exited before the others
      } else if (type == kReport) {
        results[static_cast<size_t>(r)].result = payload;
      } else {
        ++gathered;
        AppendU32(&reply, static_cast<uint32_t>(payload.size()));
        AppendU32(&reply, static_cast<uint32_t>(received.size()));
        reply += payload;
        fds.insert(fds.end(), received.begin(), received.end());
      }
    }
    if (!failed && gathered == size) {
      for (int fd : hub_fds) failed = failed || !SendMessage(fd, kGather, reply, fds);
    } else if (!failed && gathered == 0) {
      reported = true;
    } else {
      failed = true;  // some ranks reported while others wait in a gather
    }
    CloseAll(fds);
  }
  for (size_t r = 0; r < pids.size(); ++r) {
    if (failed) kill(pids[r], SIGKILL);
    int status = 0;
    waitpid(pids[r], &status, 0);
    results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    close(hub_fds[r]);
  }
  return results;
}

}  // namespace tessera::replay
