#include "scheduler/read_access.h"

#include <strings.h>

namespace tessera::scheduler {

std::optional<ReadAccess> ParseReadAccess(const std::string& text) {
  if (text == "token") return ReadAccess::kToken;
  if (text == "open") return ReadAccess::kOpen;
  return std::nullopt;
}

std::optional<std::string> BearerToken(const std::string& authorization) {
  constexpr size_t kScheme = 7;  // "Bearer "
  if (authorization.size() <= kScheme || strncasecmp(authorization.c_str(), "bearer ", kScheme)) {
    return std::nullopt;
  }
  size_t start = authorization.find_first_not_of(' ', kScheme);
  if (start == std::string::npos) return std::nullopt;
  std::string token = authorization.substr(start);
  while (!token.empty() && token.back() == ' ') token.pop_back();
  if (token.empty() || token.find_first_of(" \t") != std::string::npos) return std::nullopt;
  return token;
}

}  // namespace tessera::scheduler
