// The kube.* configuration keys and the Client they describe.
//
//   kube.kubeconfig  string    path or content of a kubeconfig (flag --kubeconfig); "" =
//   $KUBECONFIG,
//                              ~/.kube/config, then in-cluster (see connection.h)
//   kube.qps         float     client-side request rate limit (default 50; 0 = none)
//   kube.burst       int       requests allowed at once above qps (default 100)
//   kube.timeout     duration  per-request timeout (default 30s)
// Thread-compatible: call AddConfigKeys while building the schema.
#pragma once

#include <memory>

#include "common/status.h"
#include "config/config.h"
#include "config/schema.h"
#include "kube/client.h"
#include "kube/connection.h"

namespace tessera::kube {

void AddConfigKeys(config::Schema& schema);

// The ClientOptions the kube.* keys give.
ClientOptions ClientOptionsFromConfig(const config::Config& config);

// Resolves the connection (kube.kubeconfig and `env`) and creates a Client with those options.
Result<std::unique_ptr<Client>> ClientFromConfig(const config::Config& config,
                                                 const Environment& env);

// ClientFromConfig for a command that needs the cluster, resolved from the process's environment.
// Without one it logs why and what to set, and returns nullptr (the command then exits 1).
std::unique_ptr<Client> CommandClient(const config::Config& config);

}  // namespace tessera::kube
