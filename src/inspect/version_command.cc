#include "inspect/version_command.h"

#include <sstream>

#include "common/strings.h"
#include "inspect/inspect_command.h"
#include "inspect/scheduler_source.h"
#include "kube/objects.h"

namespace tessera::inspect {
namespace {

// The version label of the scheduler's tessera_build_info series in Prometheus text.
std::string BuildInfoVersion(const std::string& metrics) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (!StartsWith(line, "tessera_build_info{") ||
        line.find("component=\"scheduler\"") == std::string::npos) {
      continue;
    }
    size_t at = line.find("version=\"");
    if (at == std::string::npos) continue;
    at += 9;
    size_t end = line.find('"', at);
    if (end != std::string::npos) return line.substr(at, end - at);
  }
  return "";
}

// "reg.example/tessera:0.1.0" -> "0.1.0"; "" without a tag (or with a digest only).
std::string ImageTag(const std::string& image) {
  size_t colon = image.rfind(':');
  if (colon == std::string::npos || image.find('/', colon) != std::string::npos ||
      image.find('@') != std::string::npos) {
    return "";
  }
  return image.substr(colon + 1);
}

int FromScheduler(const config::Config& config, std::chrono::milliseconds timeout,
                  std::ostream& out, std::ostream& err) {
  std::string url = config.GetString("inspect.scheduler");
  SchedulerClientOptions options{.ca_file = config.GetString("inspect.scheduler-ca"),
                                 .timeout = timeout};
  Result<std::string> metrics = GetFromScheduler(url, "/metrics", options);
  if (!metrics.ok()) {
    err << "kubectl tessera version: " << metrics.status().message() << "\n";
    return 1;
  }
  std::string version = BuildInfoVersion(*metrics);
  if (version.empty()) {
    err << "kubectl tessera version: the scheduler at " << url
        << " answers, but its /metrics has no tessera_build_info{component=\"scheduler\"}\n";
    return 1;
  }
  out << "scheduler " << version << " (" << url << ")\n";
  return 0;
}

int FromApiServer(const config::Config& config, const kube::Environment& env,
                  std::chrono::milliseconds timeout, std::ostream& out, std::ostream& err) {
  Result<std::unique_ptr<kube::Client>> client = InspectClient(config, env, timeout);
  Result<kube::ObjectList> pods =
      client.ok() ? (*client)->List(kube::kPods, {.ns = config.GetString("inspect.namespace"),
                                                  .label_selector = kSchedulerPodSelector})
                  : Result<kube::ObjectList>(client.status());
  if (!pods.ok()) {
    err << "kubectl tessera version: cannot read the scheduler's pods from the API server: "
        << pods.status().message() << "\n";
    return 1;
  }
  int shown = 0;
  for (const kube::Json& pod : pods->items) {
    std::string phase = kube::PhaseOf(pod);
    if (phase == "Succeeded" || phase == "Failed") continue;
    std::string image = kube::StringAt(pod, "/spec/containers/0/image");
    std::string version = kube::StringAt(pod, "/metadata/labels/app.kubernetes.io~1version");
    if (version.empty()) version = ImageTag(image);
    out << "scheduler " << (version.empty() ? "(unknown version)" : version) << " (pod "
        << kube::NamespaceOf(pod) << "/" << kube::NameOf(pod) << ", image " << image << ")\n";
    ++shown;
  }
  if (shown == 0) {
    err << "kubectl tessera version: no running scheduler pod (label " << kSchedulerPodSelector
        << ") found; is Tessera installed in this cluster?\n";
    return 1;
  }
  return 0;
}

}  // namespace

int RunVersion(const config::Config& config, const kube::Environment& env,
               const std::string& plugin_version, std::ostream& out, std::ostream& err) {
  out << "kubectl-tessera " << plugin_version << "\n";
  Result<std::chrono::milliseconds> timeout = RequestTimeout(config);
  if (!timeout.ok()) {
    err << "kubectl tessera version: " << timeout.status().message() << "\n";
    return 2;
  }
  return config.GetString("inspect.scheduler").empty()
             ? FromApiServer(config, env, *timeout, out, err)
             : FromScheduler(config, *timeout, out, err);
}

}  // namespace tessera::inspect
