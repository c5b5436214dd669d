// RunDemo: `tessera demo`. Starts the demo cluster (demo_cluster.h), creates the pods of
// examples/ with kubectl, narrates what happens step by step on `out`, checks every outcome it
// tells, and stops every process it started on every way out (return, error, SIGINT/SIGTERM).
//
// Returns 0 when every check held, 1 when one failed or the cluster could not start.
// Thread-safety: call once per process (it installs signal handlers).
#pragma once

#include <ostream>

namespace tessera::demo {

int RunDemo(std::ostream& out);

}  // namespace tessera::demo
