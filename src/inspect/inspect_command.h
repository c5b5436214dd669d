// `tessera inspect` / `kubectl tessera inspect [NODE] [-d] [-o wide|gib|json]`: the GPUs of the
// cluster, what is allocated on each, the pods waiting for one and why. Reads the API server
// (kube.* keys: kubeconfig) or, with --scheduler URL, the scheduler's GET /inspect.
//
// Keys (prefix "inspect"):
//   inspect.output (-o)          plain | wide | json
//   inspect.details (-d)         list the pods on each GPU
//   inspect.scheduler            URL of the Tessera scheduler; "" = read the API server
//   inspect.scheduler-ca         PEM CA bundle for an https:// scheduler URL
//   inspect.chart                auto (when stdout is a terminal) | always | never
//   inspect.scheduler-name       schedulerName of Tessera's pods (finds pending pods)
// Exit codes: 0 shown, 1 the source could not be read or the node is unknown, 2 bad arguments.
// Thread-compatible.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/command.h"
#include "config/config.h"
#include "config/schema.h"
#include "kube/connection.h"

namespace tessera::inspect {

void AddInspectKeys(config::Schema& schema);

config::Command InspectCommand();

// What the command runs, with its streams and terminal detection given (for tests).
int RunInspect(const config::Config& config, const std::vector<std::string>& positional,
               const kube::Environment& env, bool stdout_is_terminal, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::inspect
