// `tessera node`: the node agent (DaemonSet on every GPU node). Wires NVML, the API server, the
// kubelet sockets and the Agent together and runs until SIGTERM or SIGINT.
#pragma once

#include "config/command.h"

namespace tessera::node {

config::Command NodeCommand();

}  // namespace tessera::node
