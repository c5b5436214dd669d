#include "http/connection_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace tessera::http {
namespace {

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

ConnectionStream::ConnectionStream(int fd, SSL* ssl, int stop_fd)
    : fd_(fd), ssl_(ssl), stop_fd_(stop_fd) {
  int flags = fcntl(fd_, F_GETFL, 0);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  if (ssl_) SSL_set_fd(ssl_, fd_);
}

ConnectionStream::~ConnectionStream() {
  if (ssl_) SSL_free(ssl_);
}

bool ConnectionStream::Wait(short events, Clock::time_point deadline) const {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd fds[2] = {{.fd = fd_, .events = events, .revents = 0},
                     {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents != 0) return false;
    return fds[0].revents != 0;
  }
}

bool ConnectionStream::Handshake(Clock::time_point deadline) {
  if (!ssl_) return true;
  for (;;) {
    int r = SSL_accept(ssl_);
    if (r == 1) return true;
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ) {
      if (!Wait(POLLIN, deadline)) return false;
    } else if (err == SSL_ERROR_WANT_WRITE) {
      if (!Wait(POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
}

bool ConnectionStream::WaitForRequest(Clock::time_point deadline) {
  if (ssl_ && SSL_pending(ssl_) > 0) return true;
  return Wait(POLLIN, deadline);
}

void ConnectionStream::Close() {
  if (ssl_) SSL_shutdown(ssl_);
}

void ConnectionStream::StartRequest(Clock::time_point read_deadline,
                                    Clock::duration write_timeout) {
  read_deadline_ = read_deadline;
  write_timeout_ = write_timeout;
  write_started_ = false;
}

ConnectionStream::Clock::time_point ConnectionStream::WriteDeadline() {
  if (!write_started_) {
    write_started_ = true;
    write_deadline_ = Clock::now() + write_timeout_;
  }
  return write_deadline_;
}

bool ConnectionStream::is_readable() const {
  if (ssl_ && SSL_pending(ssl_) > 0) return true;
  return Wait(POLLIN, read_deadline_);
}

bool ConnectionStream::is_writable() const {
  return Wait(POLLOUT, write_started_ ? write_deadline_ : Clock::now() + write_timeout_);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  for (;;) {
    if (ssl_) {
      int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      short events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
      if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) ||
          !Wait(events, read_deadline_)) {
        return -1;
      }
    } else {
      ssize_t n = recv(fd_, ptr, size, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !Wait(POLLIN, read_deadline_)) return -1;
    }
  }
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  Clock::time_point deadline = WriteDeadline();
  size_t done = 0;
  while (done < size) {
    if (ssl_) {
      // A retried SSL_write must be given the same bytes, so the chunk stays the same until
      // it is written.
      int chunk = static_cast<int>(std::min<size_t>(size - done, 1 << 30));
      int n = SSL_write(ssl_, ptr + done, chunk);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      short events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
      if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) || !Wait(events, deadline)) {
        return -1;
      }
    } else {
      ssize_t n = send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n >= 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !Wait(POLLOUT, deadline)) return -1;
    }
  }
  return static_cast<ssize_t>(size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, ip, port);
}

}  // namespace tessera::http
