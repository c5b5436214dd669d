#include "inspect/inspect_command.h"

#include <unistd.h>

#include <iostream>

#include "config/loader.h"
#include "inspect/api_source.h"
#include "inspect/render.h"
#include "inspect/scheduler_source.h"
#include "kube/config_keys.h"
#include "scheduler/dialect.h"

namespace tessera::inspect {
namespace {

// Where the view comes from, and every node that source knows.
struct Source {
  ClusterView view;
  std::vector<std::string> all_nodes;
};

Result<Source> ReadApiServer(const config::Config& config, const kube::Environment& env) {
  Result<std::unique_ptr<kube::Client>> client = kube::ClientFromConfig(config, env);
  if (!client.ok()) {
    return client.status().WithContext(
        "no API server to read (give --kubeconfig FILE, set KUBECONFIG, or use --scheduler URL)");
  }
  ApiSourceOptions options;
  options.scheduler_name = config.GetString("inspect.scheduler-name");
  options.resources = scheduler::DialectConfig{}.ResourceNames();
  Result<ApiSnapshot> snap = ReadFromApiServer(**client, options);
  if (!snap.ok()) {
    std::string hint = snap.status().code() == StatusCode::kUnavailable
                           ? "cannot reach the API server (check --kubeconfig / KUBECONFIG and "
                             "that the cluster is up, or use --scheduler URL)"
                           : "reading nodes, pods and events from the API server failed (the "
                             "user needs list on nodes, pods and events)";
    return snap.status().WithContext(hint);
  }
  return Source{std::move(snap->view), std::move(snap->all_nodes)};
}

Result<Source> ReadScheduler(const config::Config& config) {
  SchedulerClientOptions options;
  options.ca_file = config.GetString("inspect.scheduler-ca");
  Result<SchedulerSnapshot> snap =
      ReadFromScheduler(config.GetString("inspect.scheduler"), options);
  if (!snap.ok()) return snap.status();
  return Source{std::move(snap->view), std::move(snap->all_nodes)};
}

}  // namespace

void AddInspectKeys(config::Schema& schema) {
  schema.Add({.path = "inspect.output",
              .type = config::Type::kString,
              .default_value = "plain",
              .help = "output format: plain, wide (adds UUID, NUMA node, health, exclusivity), "
                      "gib (one line per node, each GPU's allocated/total memory in GiB, as "
                      "gpushare's kubectl inspect gpushare) or json",
              .allowed = {"plain", "wide", "gib", "json"},
              .flags = {"o", "output"}});
  schema.Add({.path = "inspect.details",
              .type = config::Type::kBool,
              .default_value = "false",
              .help = "list the pods on each GPU with their memory and compute",
              .flags = {"d", "details"}});
  schema.Add({.path = "inspect.scheduler",
              .type = config::Type::kString,
              .default_value = "",
              .help = "URL of the Tessera scheduler (http:// or https://) to read its GET /inspect "
                      "instead of the API server",
              .flags = {"scheduler"}});
  schema.Add({.path = "inspect.scheduler-ca",
              .type = config::Type::kString,
              .default_value = "",
              .help = "PEM CA bundle that signed the scheduler's certificate (https:// URLs)"});
  schema.Add({.path = "inspect.chart",
              .type = config::Type::kString,
              .default_value = "auto",
              .help = "bar chart per GPU: auto (when stdout is a terminal), always or never",
              .allowed = {"auto", "always", "never"}});
  schema.Add({.path = "inspect.scheduler-name",
              .type = config::Type::kString,
              .default_value = "tessera",
              .help = "schedulerName of the pods Tessera schedules (to list the pending ones)"});
}

int RunInspect(const config::Config& config, const std::vector<std::string>& positional,
               const kube::Environment& env, bool stdout_is_terminal, std::ostream& out,
               std::ostream& err) {
  if (positional.size() > 1) {
    err << "tessera inspect: at most one node name, got " << positional.size()
        << "; usage: kubectl tessera inspect [NODE] [-d] [-o wide|gib|json] [--scheduler URL]\n";
    return 2;
  }
  Result<Source> source = config.GetString("inspect.scheduler").empty() ? ReadApiServer(config, env)
                                                                        : ReadScheduler(config);
  if (!source.ok()) {
    err << "tessera inspect: " << source.status().message() << "\n";
    return 1;
  }
  if (!positional.empty()) {
    Status kept = source->view.KeepOnlyNode(positional[0], source->all_nodes);
    if (!kept.ok()) {
      err << "tessera inspect: " << kept.message() << "\n";
      return 1;
    }
  }
  source->view.Finish();

  RenderOptions options;
  const std::string& format = config.GetString("inspect.output");
  options.format = format == "json"   ? OutputFormat::kJson
                   : format == "wide" ? OutputFormat::kWide
                   : format == "gib"  ? OutputFormat::kGib
                                      : OutputFormat::kPlain;
  options.details = config.GetBool("inspect.details");
  const std::string& chart = config.GetString("inspect.chart");
  options.bars = chart == "always" || (chart == "auto" && stdout_is_terminal);
  out << Render(source->view, options);
  return 0;
}

config::Command InspectCommand() {
  return {.name = "inspect",
          .summary =
              "show GPUs, their allocations and pending pods (kubectl tessera inspect "
              "[NODE] [-d] [-o wide|gib|json])",
          .key_prefixes = {"inspect", "kube"},
          .run = [](const config::Config& config, const std::vector<std::string>& positional) {
            return RunInspect(config, positional, config::ProcessEnvironment(),
                              isatty(STDOUT_FILENO) == 1, std::cout, std::cerr);
          }};
}

}  // namespace tessera::inspect
