#include "kube/config_keys.h"

#include "config/loader.h"
#include "log/log.h"

namespace tessera::kube {

void AddConfigKeys(config::Schema& schema) {
  schema.Add({.path = "kube.kubeconfig",
              .type = config::Type::kString,
              .default_value = "",
              .help = "kubeconfig file, or its content (a value with a newline, e.g. from "
                      "TESSERA_KUBE_KUBECONFIG_BASE64); empty: $KUBECONFIG, ~/.kube/config, "
                      "then the in-cluster service account",
              .flags = {"kubeconfig"},
              .secret = true});
  schema.Add({.path = "kube.qps",
              .type = config::Type::kFloat,
              .default_value = "50",
              .help = "client-side limit on API requests per second (0 = no limit)",
              .min = 0});
  schema.Add({.path = "kube.burst",
              .type = config::Type::kInt,
              .default_value = "100",
              .help = "API requests allowed at once above kube.qps",
              .min = 1});
  schema.Add({.path = "kube.timeout",
              .type = config::Type::kDuration,
              .default_value = "30s",
              .help = "timeout of one API request (watches excepted)",
              .min = 0.001});
}

ClientOptions ClientOptionsFromConfig(const config::Config& config) {
  ClientOptions options;
  options.qps = config.GetFloat("kube.qps");
  options.burst = static_cast<int>(config.GetInt("kube.burst"));
  options.timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.GetDuration("kube.timeout"));
  return options;
}

Result<std::unique_ptr<Client>> ClientFromConfig(const config::Config& config,
                                                 const Environment& env) {
  ASSIGN_OR_RETURN(ConnectionConfig connection,
                   ResolveConnection(config.GetString("kube.kubeconfig"), env));
  return Client::Create(connection, ClientOptionsFromConfig(config));
}

std::unique_ptr<Client> CommandClient(const config::Config& config) {
  Result<std::unique_ptr<Client>> client = ClientFromConfig(config, config::ProcessEnvironment());
  if (client.ok()) return std::move(*client);
  log::Error("cannot connect to a Kubernetes API server; set --kubeconfig or run in a cluster",
             {{"error", client.status().message()}});
  return nullptr;
}

}  // namespace tessera::kube
