#include "scheduler/listen_address.h"

namespace tessera::scheduler {

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument("listen address \"" + listen +
                           "\" must be host:port, e.g. 0.0.0.0:8443");
  }
  std::string host = listen.substr(0, colon);
  std::string port_text = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  if (!port_text.empty() && port_text.size() <= 5 &&
      port_text.find_first_not_of("0123456789") == std::string::npos) {
    port = std::stoi(port_text);
  }
  if (port < 0 || port > 65535) {
    return InvalidArgument("listen address \"" + listen + "\": port must be 0..65535");
  }
  return std::make_pair(host, port);
}

}  // namespace tessera::scheduler
