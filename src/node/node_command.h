// `tessera node`: the node agent (DaemonSet on every GPU node). Wires NVML, the API server, the
// kubelet sockets and the Agent together and runs until SIGTERM or SIGINT.
#pragma once

#include "cli/command.h"

namespace tessera::node {

cli::Command NodeCommand();

}  // namespace tessera::node
