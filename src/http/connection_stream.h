// ConnectionStream: one accepted connection as an httplib::Stream whose reads and writes end at a
// deadline instead of after a timeout per call, so a client that sends one byte a second cannot
// hold the connection past it. Plain TCP, or TLS through OpenSSL over the same socket.
//
// The socket is made non-blocking; every wait is a poll(2) that also ends when `stop_fd` becomes
// readable (the server is stopping). The stream does not own the socket or `stop_fd`; it owns
// the SSL object when one is given. Used by one thread at a time.
#pragma once

#include <openssl/ssl.h>

#include <httplib.h>

#include <chrono>

namespace tessera::http {

class ConnectionStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  // `ssl` null = plain TCP.
  ConnectionStream(int fd, SSL* ssl, int stop_fd);
  ~ConnectionStream() override;
  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;

  // The TLS handshake (nothing for plain TCP). False when it failed or did not end by `deadline`.
  bool Handshake(Clock::time_point deadline);
  // Waits for the first byte of the next request. False on timeout, stop, close or error.
  bool WaitForRequest(Clock::time_point deadline);
  // Sends a TLS close_notify (nothing for plain TCP); never waits.
  void Close();

  // Reads must be done by `read_deadline`. Writes get `write_timeout` from the first write
  // after this call.
  void StartRequest(Clock::time_point read_deadline, Clock::duration write_timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }
  // The TLS session (null for plain TCP).
  const SSL* ssl() const { return ssl_; }

 private:
  // True when `events` are ready on the socket before `deadline` and the server is not stopping.
  bool Wait(short events, Clock::time_point deadline) const;
  Clock::time_point WriteDeadline();

  const int fd_;
  SSL* const ssl_;
  const int stop_fd_;
  Clock::time_point read_deadline_;
  Clock::duration write_timeout_{};
  Clock::time_point write_deadline_{};
  bool write_started_ = false;
};

}  // namespace tessera::http
