// `tessera scheduler`: the extender, admission webhook and metrics server, connected to the API
// server given by kube.* (--kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster). Runs until
// SIGINT or SIGTERM. Exit codes: 0 after a signal, 1 when it cannot start (no API server
// configuration, address in use, bad TLS files), 2 for unexpected arguments.
#pragma once

#include "config/command.h"

namespace tessera::scheduler {

config::Command SchedulerCommand();

}  // namespace tessera::scheduler
