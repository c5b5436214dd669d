// `tessera inspect` / `kubectl tessera inspect [NODE] [-d] [-o FORMAT] [-n NAMESPACE]`: the GPUs
// of the cluster, what is allocated on each, the pods waiting for one and why. Reads the API
// server (kube.* keys and --context: the kubeconfig, merged from a KUBECONFIG list as kubectl
// does) or, with --scheduler URL, the scheduler's GET /inspect.
// Keys (prefix "inspect"): output (-o: plain, wide, gib, json, yaml, jsonpath=TEMPLATE), details
// (-d), no-headers, namespace (-n), request-timeout, scheduler (URL; "" = the API server),
// scheduler-ca, chart (auto, always, never), scheduler-name, and kubectl's connection flags:
// context, cluster, user, server (-s), certificate-authority, insecure-skip-tls-verify, token,
// username, password, as, as-group, as-uid.
// Exit codes: 0 shown, 1 the source could not be read or the node is unknown, 2 bad arguments.
// Thread-compatible.
//
//   int rc = RunInspect(config, positional, env, isatty(1), std::cout, std::cerr);
//
// Every key and the output: docs/inspect.md.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "config/command.h"
#include "config/config.h"
#include "config/schema.h"
#include "kube/client.h"
#include "kube/connection.h"

namespace tessera::inspect {

void AddInspectKeys(config::Schema& schema);

config::Command InspectCommand();

// The per-request timeout: --request-timeout as kubectl reads it (0: none), else kube.timeout.
// InvalidArgument for a value kubectl would refuse.
Result<std::chrono::milliseconds> RequestTimeout(const config::Config& config);

// kubectl's connection flags as the kube client's overrides.
kube::ConnectionOverrides ConnectionFlags(const config::Config& config);

// A Client for the kubeconfig that kube.kubeconfig and `env` (KUBECONFIG, HOME) name, with the
// connection flags laid over it (--context, --cluster, --user, --server, --token, --as, ...), and
// `timeout` per request.
Result<std::unique_ptr<kube::Client>> InspectClient(const config::Config& config,
                                                    const kube::Environment& env,
                                                    std::chrono::milliseconds timeout);

// What the command runs, with its streams and terminal detection given (for tests).
int RunInspect(const config::Config& config, const std::vector<std::string>& positional,
               const kube::Environment& env, bool stdout_is_terminal, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::inspect
