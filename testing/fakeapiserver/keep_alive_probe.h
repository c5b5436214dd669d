// KeepAliveAnswerMillis: how long a plain-HTTP server takes to answer requests on a connection
// that it has already answered on (keep-alive), as kube-scheduler and client-go reuse theirs.
// A server that writes headers and body apart without TCP_NODELAY makes every such answer wait
// for the client's delayed ACK (about 40 ms on Linux). Test-only; header-only, so that the
// scheduler's tests can probe their own server with it too. Thread-compatible.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera::testing {

// Sends "GET <path>" `connections` times `per_connection` times over keep-alive connections to
// 127.0.0.1:<port> and returns the time of each answer after the first on its connection, in
// milliseconds, sorted. A connection the server closes early ends its round; empty on failure.
inline std::vector<double> KeepAliveAnswerMillis(int port, const std::string& path,
                                                 int connections = 3, int per_connection = 4) {
  std::vector<double> out;
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (int c = 0; c < connections; ++c) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (fd >= 0) ::close(fd);
      return {};
    }
    for (int r = 0; r < per_connection; ++r) {
      auto start = std::chrono::steady_clock::now();
      if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size())) {
        break;
      }
      // Read the headers, then as much body as Content-Length says.
      std::string data;
      size_t header_end = std::string::npos;
      size_t want = 0;
      bool complete = false;
      char buf[4096];
      while (!complete) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
        if (header_end == std::string::npos) {
          header_end = data.find("\r\n\r\n");
          if (header_end == std::string::npos) continue;
          std::string headers = data.substr(0, header_end);
          std::transform(headers.begin(), headers.end(), headers.begin(),
                         [](unsigned char ch) { return std::tolower(ch); });
          size_t at = headers.find("content-length:");
          want = at == std::string::npos ? 0 : std::strtoul(headers.c_str() + at + 15, nullptr, 10);
        }
        complete = data.size() >= header_end + 4 + want;
      }
      if (!complete) break;
      if (r > 0) {
        out.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
    }
    ::close(fd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tessera::testing
