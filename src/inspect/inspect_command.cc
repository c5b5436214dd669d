#include "inspect/inspect_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>

#include "common/strings.h"
#include "config/loader.h"
#include "inspect/api_source.h"
#include "inspect/jsonpath.h"
#include "inspect/render.h"
#include "inspect/scheduler_source.h"
#include "kube/config_keys.h"
#include "scheduler/dialect_config.h"

namespace tessera::inspect {
namespace {

// Where the view comes from, and every node that source knows.
struct Source {
  ClusterView view;
  std::vector<std::string> all_nodes;
};

Result<Source> ReadApiServer(const config::Config& config, const kube::Environment& env,
                             std::chrono::milliseconds timeout) {
  Result<std::unique_ptr<kube::Client>> client = InspectClient(config, env, timeout);
  // Only a connection that was not found needs the hint; a bad flag or credential says itself.
  if (!client.ok() && client.status().code() == StatusCode::kNotFound) {
    return client.status().WithContext(
        "no API server to read (give --kubeconfig FILE, set KUBECONFIG, give --server URL, or "
        "use --scheduler URL)");
  }
  if (!client.ok()) return client.status();
  ApiSourceOptions options;
  options.scheduler_name = config.GetString("inspect.scheduler-name");
  options.resources = options.dialects.ResourceNames();
  options.ns = config.GetString("inspect.namespace");
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

// The token in `file` (inspect.scheduler-token-file), without surrounding white space.
Result<std::string> ReadTokenFile(const std::string& file) {
  std::ifstream in(file);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return InvalidArgument("inspect.scheduler-token-file " + file +
                           ": cannot be read (give a file that holds a Kubernetes token, e.g. "
                           "the output of `kubectl create token NAME`)");
  }
  const size_t start = token.find_first_not_of(" \t\r\n");
  const size_t end = token.find_last_not_of(" \t\r\n");
  if (start == std::string::npos) {
    return InvalidArgument("inspect.scheduler-token-file " + file +
                           " is empty: it must hold a "
                           "Kubernetes token (e.g. the output of `kubectl create token NAME`)");
  }
  return token.substr(start, end - start + 1);
}

Result<Source> ReadScheduler(const config::Config& config, std::chrono::milliseconds timeout) {
  SchedulerClientOptions options;
  options.ca_file = config.GetString("inspect.scheduler-ca");
  options.timeout = timeout;
  options.ns = config.GetString("inspect.namespace");
  if (std::string file = config.GetString("inspect.scheduler-token-file"); !file.empty()) {
    ASSIGN_OR_RETURN(options.token, ReadTokenFile(file));
  }
  Result<SchedulerSnapshot> snap =
      ReadFromScheduler(config.GetString("inspect.scheduler"), options);
  if (!snap.ok()) return snap.status();
  return Source{std::move(snap->view), std::move(snap->all_nodes)};
}

// What -o asks for: a format, or a JSONPath template.
struct Output {
  OutputFormat format = OutputFormat::kPlain;
  std::optional<JsonPath> jsonpath;
};

Result<Output> ParseOutput(const std::string& text) {
  static const std::map<std::string, OutputFormat> formats = {{"plain", OutputFormat::kPlain},
                                                              {"wide", OutputFormat::kWide},
                                                              {"gib", OutputFormat::kGib},
                                                              {"json", OutputFormat::kJson},
                                                              {"yaml", OutputFormat::kYaml}};
  Output out;
  if (auto it = formats.find(text); it != formats.end()) {
    out.format = it->second;
    return out;
  }
  if (StartsWith(text, "jsonpath=")) {
    ASSIGN_OR_RETURN(JsonPath path, JsonPath::Parse(text.substr(9)));
    out.jsonpath = std::move(path);
    return out;
  }
  return InvalidArgument("-o " + text +
                         ": expected plain, wide, gib, json, yaml or jsonpath=TEMPLATE");
}

}  // namespace

Result<std::chrono::milliseconds> RequestTimeout(const config::Config& config) {
  std::string text = config.GetString("inspect.request-timeout");
  if (text.empty()) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        config.GetDuration("kube.timeout"));
  }
  // As kubectl: an integer alone is seconds, else a Go duration ("1m30s"); 0 = no timeout.
  static const std::map<std::string, double> seconds_per = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}};
  Status bad = InvalidArgument("--request-timeout " + text +
                               ": expected a duration such as 30s, 1m or 1m30s (an integer alone "
                               "is seconds; 0 waits for ever)");
  if (text.find_first_not_of("0123456789") == std::string::npos) text += "s";
  double total = 0;
  for (size_t at = 0; at < text.size();) {
    size_t unit_at = text.find_first_not_of("0123456789.", at);
    if (unit_at == at || unit_at == std::string::npos) return bad;
    size_t unit_end = std::min(text.find_first_of("0123456789.", unit_at), text.size());
    auto scale = seconds_per.find(text.substr(unit_at, unit_end - unit_at));
    std::string number = text.substr(at, unit_at - at);
    char* rest = nullptr;
    double value = std::strtod(number.c_str(), &rest);
    if (scale == seconds_per.end() || *rest != '\0') return bad;
    total += value * scale->second;
    at = unit_end;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total * 1000));
}

kube::ConnectionOverrides ConnectionFlags(const config::Config& config) {
  return {.context = config.GetString("inspect.context"),
          .cluster = config.GetString("inspect.cluster"),
          .user = config.GetString("inspect.user"),
          .server = config.GetString("inspect.server"),
          .certificate_authority = config.GetString("inspect.certificate-authority"),
          .insecure_skip_tls_verify = config.GetBool("inspect.insecure-skip-tls-verify"),
          .token = config.GetString("inspect.token"),
          .username = config.GetString("inspect.username"),
          .password = config.GetString("inspect.password"),
          .as = config.GetString("inspect.as"),
          .as_uid = config.GetString("inspect.as-uid"),
          .as_groups = config.GetList("inspect.as-group")};
}

Result<std::unique_ptr<kube::Client>> InspectClient(const config::Config& config,
                                                    const kube::Environment& env,
                                                    std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(kube::ConnectionConfig connection,
                   kube::ResolveConnection(config.GetString("kube.kubeconfig"), env,
                                           kube::kServiceAccountDir, ConnectionFlags(config)));
  kube::ClientOptions options = kube::ClientOptionsFromConfig(config);
  options.timeout = timeout;
  options.user_agent = "kubectl-tessera";
  return kube::Client::Create(connection, options);
}

void AddInspectKeys(config::Schema& schema) {
  schema.Add({.path = "inspect.output",
              .type = config::Type::kString,
              .default_value = "plain",
              .help = "output format: plain, wide (adds UUID, NUMA node, health, exclusivity), "
                      "gib (one line per node, each GPU's allocated/total memory in GiB, as "
                      "gpushare's kubectl inspect gpushare), json, yaml or jsonpath=TEMPLATE",
              .flags = {"o", "output"}});
  schema.Add({.path = "inspect.details",
              .type = config::Type::kBool,
              .default_value = "false",
              .help = "list the pods on each GPU with their memory and compute",
              .flags = {"d", "details"}});
  schema.Add({.path = "inspect.no-headers",
              .type = config::Type::kBool,
              .default_value = "false",
              .help = "print the tables (plain, wide, gib) without their column header line",
              .flags = {"no-headers"}});
  schema.Add({.path = "inspect.namespace",
              .type = config::Type::kString,
              .default_value = "",
              .help = "read and show only the pods (and DRA claims) of this namespace; the GPUs "
                      "then show what it holds of them (empty: every namespace)",
              .flags = {"n", "namespace"}});
  schema.Add({.path = "inspect.context",
              .type = config::Type::kString,
              .default_value = "",
              .help = "the kubeconfig context to use instead of its current-context",
              .flags = {"context"}});
  // kubectl's other connection flags (kube/connection_overrides.h has their precedence).
  schema.Add({.path = "inspect.cluster",
              .type = config::Type::kString,
              .default_value = "",
              .help = "the kubeconfig cluster to use instead of the context's",
              .flags = {"cluster"}});
  schema.Add({.path = "inspect.user",
              .type = config::Type::kString,
              .default_value = "",
              .help = "the kubeconfig user to use instead of the context's",
              .flags = {"user"}});
  schema.Add({.path = "inspect.server",
              .type = config::Type::kString,
              .default_value = "",
              .help = "the API server's address (https://host:port), instead of the cluster's; "
                      "works without a kubeconfig",
              .flags = {"s", "server"}});
  schema.Add({.path = "inspect.certificate-authority",
              .type = config::Type::kString,
              .default_value = "",
              .help = "PEM file of the CA that signed the API server's certificate, instead of "
                      "the cluster's",
              .flags = {"certificate-authority"}});
  schema.Add({.path = "inspect.insecure-skip-tls-verify",
              .type = config::Type::kBool,
              .default_value = "false",
              .help = "do not verify the API server's certificate (insecure)",
              .flags = {"insecure-skip-tls-verify"}});
  schema.Add({.path = "inspect.token",
              .type = config::Type::kString,
              .default_value = "",
              .help = "bearer token, instead of the user's credentials",
              .flags = {"token"},
              .secret = true});
  schema.Add({.path = "inspect.username",
              .type = config::Type::kString,
              .default_value = "",
              .help = "username for basic auth (sent to https:// servers only)",
              .flags = {"username"}});
  schema.Add({.path = "inspect.password",
              .type = config::Type::kString,
              .default_value = "",
              .help = "password for basic auth (sent to https:// servers only)",
              .flags = {"password"},
              .secret = true});
  schema.Add({.path = "inspect.as",
              .type = config::Type::kString,
              .default_value = "",
              .help = "user to impersonate (Impersonate-User), a user or a service account "
                      "(system:serviceaccount:NS:NAME)",
              .flags = {"as"}});
  schema.Add({.path = "inspect.as-group",
              .type = config::Type::kList,
              .default_value = "",
              .help = "group to impersonate (Impersonate-Group); repeat the flag for several "
                      "(a comma also separates them); needs --as",
              .flags = {"as-group"}});
  schema.Add({.path = "inspect.as-uid",
              .type = config::Type::kString,
              .default_value = "",
              .help = "UID to impersonate (Impersonate-Uid); needs --as",
              .flags = {"as-uid"}});
  schema.Add({.path = "inspect.request-timeout",
              .type = config::Type::kString,
              .default_value = "",
              .help = "how long one request may take, as kubectl's: 30s, 1m, an integer of "
                      "seconds, or 0 for no limit (empty: kube.timeout)",
              .flags = {"request-timeout"}});
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
  schema.Add({.path = "inspect.scheduler-token-file",
              .type = config::Type::kString,
              .default_value = "",
              .help = "file holding a Kubernetes token sent to the scheduler as a bearer token "
                      "(its scheduler.read-access=token asks one; the user needs the ClusterRole "
                      "tessera-gpu-viewer)"});
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
        << "; usage: kubectl tessera inspect [NODE] [-d] [-o FORMAT] [-n NAMESPACE] "
           "[--scheduler URL]\n";
    return 2;
  }
  Result<Output> output = ParseOutput(config.GetString("inspect.output"));
  Result<std::chrono::milliseconds> timeout = RequestTimeout(config);
  for (const Status& bad : {output.status(), timeout.status()}) {
    if (!bad.ok()) {
      err << "tessera inspect: " << bad.message() << "\n";
      return 2;
    }
  }
  Result<Source> source = config.GetString("inspect.scheduler").empty()
                              ? ReadApiServer(config, env, *timeout)
                              : ReadScheduler(config, *timeout);
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

  if (output->jsonpath) {
    Result<std::string> text = output->jsonpath->Execute(source->view.ToJson());
    if (!text.ok()) {
      err << "tessera inspect: " << text.status().message() << "\n";
      return 1;
    }
    out << *text;
    return 0;
  }
  RenderOptions options;
  options.format = output->format;
  options.details = config.GetBool("inspect.details");
  options.no_headers = config.GetBool("inspect.no-headers");
  const std::string& chart = config.GetString("inspect.chart");
  options.bars = chart == "always" || (chart == "auto" && stdout_is_terminal);
  out << Render(source->view, options);
  return 0;
}

config::Command InspectCommand() {
  return {.name = "inspect",
          .summary =
              "show GPUs, their allocations and pending pods (kubectl tessera inspect "
              "[NODE] [-d] [-o wide|gib|json|yaml|jsonpath=...] [-n NAMESPACE])",
          .key_prefixes = {"inspect", "kube"},
          .run = [](const config::Config& config, const std::vector<std::string>& positional) {
            return RunInspect(config, positional, config::ProcessEnvironment(),
                              isatty(STDOUT_FILENO) == 1, std::cout, std::cerr);
          }};
}

}  // namespace tessera::inspect
