// Passing one file descriptor over a Unix socket (SCM_RIGHTS), as NCCL's proxy passes cuMem
// handles between processes: one byte carries it. Header-only (the demo's workload and simgpu's
// tests use it without linking Tessera's common library). Thread-safe: no state.
#pragma once

#include <sys/socket.h>

#include <cstring>

namespace tessera {

namespace fd_passing_detail {

// One byte with room for one descriptor. Not copyable: `msg` points into it.
struct Message {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  Message() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
};

}  // namespace fd_passing_detail

// Sends `fd` on `socket`; false when the send failed.
inline bool SendFd(int socket, int fd) {
  fd_passing_detail::Message m;
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return sendmsg(socket, &msg, 0) == 1;
}

// The descriptor received on `socket` (the caller closes it), or -1.
inline int ReceiveFd(int socket) {
  fd_passing_detail::Message m;
  msghdr& msg = m.msg;
  if (recvmsg(socket, &msg, 0) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

}  // namespace tessera
