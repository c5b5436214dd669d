// `kubectl tessera version`: the plugin's version, then the Tessera scheduler's when it can be
// read: with --scheduler URL from the tessera_build_info series of its GET /metrics, else from
// the API server, one line per scheduler pod (label app.kubernetes.io/name=tessera-scheduler, in
// --namespace or every namespace): its app.kubernetes.io/version label, else its image's tag.
// Exit codes: 0 both shown, 1 the scheduler's version could not be read (the plugin's is printed
// first, as kubectl version does), 2 bad arguments. Thread-compatible.
//
//   kubectl-tessera 0.1.0
//   scheduler 0.1.0 (pod tessera-system/tessera-scheduler-7d9f, image reg.example/tessera:0.1.0)
#pragma once

#include <ostream>
#include <string>

#include "config/config.h"
#include "kube/connection.h"

namespace tessera::inspect {

inline constexpr char kSchedulerPodSelector[] = "app.kubernetes.io/name=tessera-scheduler";

int RunVersion(const config::Config& config, const kube::Environment& env,
               const std::string& plugin_version, std::ostream& out, std::ostream& err);

}  // namespace tessera::inspect
