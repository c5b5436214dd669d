// The scheduler's listen address: "host:port" or "[v6]:port"; an empty host is 0.0.0.0.
#pragma once

#include <string>
#include <utility>

#include "common/status.h"

namespace tessera::scheduler {

// Splits "host:port" ("[::1]:8443" too). InvalidArgument when it is not that.
Result<std::pair<std::string, int>> ParseListen(const std::string& listen);

}  // namespace tessera::scheduler
