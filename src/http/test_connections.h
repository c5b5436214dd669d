// Test helpers: raw client connections that hold a server's threads (idle ones, and ones that
// send a request a byte at a time), for the tests of every server built on GuardedServer.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tessera::http::testing {

// A TCP connection to 127.0.0.1:`port`.
inline int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Sends `request` one byte every `gap` on each connection until `stop`.
inline void DripFeed(std::vector<int>& fds, const std::string& request,
                     std::chrono::milliseconds gap, std::atomic<bool>& stop) {
  for (size_t i = 0; !stop.load(); ++i) {
    for (int fd : fds) (void)send(fd, &request[i % request.size()], 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(gap);
  }
}

}  // namespace tessera::http::testing
