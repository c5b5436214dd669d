// RunDemo: `tessera demo`. Starts a real Kubernetes cluster on this machine with the dev cluster's
// script (demo_cluster.h), creates the pods of examples/ with the cluster's kubectl, narrates what
// happens step by step on `out`, checks every outcome it tells, and takes the cluster down on
// every way out but SIGKILL (return, error, SIGINT/SIGTERM/SIGHUP: then exit 128 + the signal).
//
// Returns 0 when every check held, 1 when one failed or the cluster could not start.
// Thread-safety: call once per process (it installs signal handlers).
#pragma once

#include <ostream>

namespace tessera::demo {

int RunDemo(std::ostream& out);

}  // namespace tessera::demo
