// `kubectl tessera resize pod/NAME [-c CONTAINER] [-n NAMESPACE] [--memory 8Gi] [--cores 40]
// [--wait 30s]`: asks the Tessera scheduler to change a running container's GPU memory and compute
// per GPU (docs/resize.md). It reads the pod, writes the request in its `tessera.io/resize`
// annotation (a merge patch: the user needs only the right to patch the pod; the webhook checks
// it), then waits for the scheduler's answer in `tessera.io/resize-status` and prints what was
// granted or why not. Keys (prefix "resize"): memory, cores, container (-c), wait; the namespace
// (-n) and the connection flags are inspect's (inspect_command.h). Without -n: "default".
// Exit codes: 0 granted (or requested, with --wait 0), 1 refused, not answered in time, or the
// API server could not be read or written, 2 bad arguments. Thread-compatible.
//
//   int rc = RunResize(config, positional, env, std::cout, std::cerr);
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/schema.h"
#include "kube/connection.h"

namespace tessera::inspect {

void AddResizeKeys(config::Schema& schema);

int RunResize(const config::Config& config, const std::vector<std::string>& positional,
              const kube::Environment& env, std::ostream& out, std::ostream& err);

}  // namespace tessera::inspect
