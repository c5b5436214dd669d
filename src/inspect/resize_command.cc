#include "inspect/resize_command.h"

#include <chrono>
#include <random>
#include <thread>

#include "annotations/allocation.h"
#include "annotations/names.h"
#include "annotations/resize.h"
#include "common/quantity.h"
#include "inspect/inspect_command.h"
#include "kube/resource.h"

namespace tessera::inspect {
namespace {

using json = nlohmann::json;
constexpr int64_t kMiB = int64_t{1} << 20;

std::string AnnotationOf(const json& pod, const char* key) {
  const json& a = pod["metadata"].value("annotations", json::object());
  auto it = a.find(key);
  return it != a.end() && it->is_string() ? it->get<std::string>() : "";
}

// "pod/NAME", "pods/NAME", "po/NAME" or "NAME": the name; "" when it names another kind.
std::string PodNameOf(const std::string& arg) {
  const size_t slash = arg.find('/');
  if (slash == std::string::npos) return arg;
  const std::string kind = arg.substr(0, slash);
  if (kind != "pod" && kind != "pods" && kind != "po") return "";
  return arg.substr(slash + 1);
}

std::string NewRequestId() {
  std::random_device random;
  std::uniform_int_distribution<uint64_t> digits;
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(digits(random)));
  return id;
}

}  // namespace

void AddResizeKeys(config::Schema& schema) {
  schema.Add({.path = "resize.memory",
              .type = config::Type::kString,
              .default_value = "",
              .help = "resize: the container's new GPU memory per GPU, a quantity in whole MiB "
                      "(8Gi, 6144Mi); empty: unchanged",
              .flags = {"memory"}});
  schema.Add({.path = "resize.cores",
              .type = config::Type::kString,
              .default_value = "",
              .help = "resize: the container's new compute per GPU, percent 1 to 100; empty: "
                      "unchanged",
              .flags = {"cores"}});
  schema.Add({.path = "resize.container",
              .type = config::Type::kString,
              .default_value = "",
              .help = "resize: the container to resize; may be left out when one container of "
                      "the pod holds GPUs",
              .flags = {"c", "container"}});
  schema.Add({.path = "resize.wait",
              .type = config::Type::kDuration,
              .default_value = "30s",
              .help = "resize: how long to wait for the Tessera scheduler's answer; 0: ask and "
                      "do not wait",
              .min = 0,
              .flags = {"wait"}});
}

int RunResize(const config::Config& config, const std::vector<std::string>& positional,
              const kube::Environment& env, std::ostream& out, std::ostream& err) {
  auto usage = [&](const std::string& why) {
    err << "kubectl tessera resize: " << why
        << "\nusage: kubectl tessera resize pod/NAME [-c CONTAINER] [-n NAMESPACE] "
           "[--memory 8Gi] [--cores 40] [--wait 30s]\n";
    return 2;
  };
  if (positional.size() != 1) {
    return usage(positional.empty() ? "name the pod (pod/NAME)"
                                    : "takes one pod, got " + std::to_string(positional.size()));
  }
  const std::string name = PodNameOf(positional[0]);
  if (name.empty()) return usage("\"" + positional[0] + "\" is not a pod: give pod/NAME");
  annotations::ResizeRequest request;
  if (const std::string memory = config.GetString("resize.memory"); !memory.empty()) {
    Result<int64_t> bytes = ParseWholeQuantity(std::string_view(memory));
    if (!bytes.ok()) return usage("--memory " + memory + ": " + bytes.status().message());
    if (*bytes < kMiB || *bytes % kMiB != 0) {
      return usage("--memory " + memory +
                   " is not allowed: give the memory per GPU in whole MiB, at least 1Mi (8Gi, "
                   "6144Mi)");
    }
    request.memory_mib = static_cast<uint64_t>(*bytes / kMiB);
  }
  if (const std::string cores = config.GetString("resize.cores"); !cores.empty()) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(cores, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != cores.size() || value < 1 || value > 100) {
      return usage("--cores " + cores + " is not allowed: compute percent per GPU, 1 to 100");
    }
    request.cores = value;
  }
  if (!request.memory_mib && !request.cores) return usage("give --memory, --cores or both");
  Result<std::chrono::milliseconds> timeout = RequestTimeout(config);
  if (!timeout.ok()) return usage(timeout.status().message());
  std::string ns = config.GetString("inspect.namespace");
  if (ns.empty()) ns = "default";

  auto fail = [&](const std::string& why) {
    err << "kubectl tessera resize: " << why << "\n";
    return 1;
  };
  Result<std::unique_ptr<kube::Client>> client = InspectClient(config, env, *timeout);
  if (!client.ok()) return fail(client.status().message());
  Result<json> pod = (*client)->Get(kube::kPods, ns, name);
  if (!pod.ok()) return fail("pod " + ns + "/" + name + ": " + pod.status().message());
  const std::string decision_text = AnnotationOf(*pod, annotations::kAllocation);
  if (decision_text.empty()) {
    return fail("pod " + ns + "/" + name + " has no Tessera decision (" + annotations::kAllocation +
                "): only a pod the Tessera scheduler placed on GPUs can be resized");
  }
  Result<annotations::Allocation> decision = annotations::ParseAllocation(decision_text);
  if (!decision.ok()) return fail("pod " + ns + "/" + name + ": " + decision.status().message());
  request.container = config.GetString("resize.container");
  std::vector<std::string> app;
  for (const annotations::ContainerAllocation& c : decision->containers) {
    if (!c.init) app.push_back(c.name);
  }
  if (request.container.empty()) {
    if (app.size() != 1) {
      std::string names;
      for (const std::string& a : app) names += (names.empty() ? "" : ", ") + a;
      return usage("pod " + ns + "/" + name + " has several containers with GPUs (" + names +
                   "): choose one with -c");
    }
    request.container = app.front();
  }
  request.id = NewRequestId();
  kube::StringMapChanges changes;
  changes[annotations::kResize] = annotations::ResizeRequestToJson(request);
  Result<json> patched = (*client)->PatchAnnotations(kube::kPods, ns, name, changes);
  if (!patched.ok()) return fail(patched.status().message());

  const auto wait =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.GetDuration("resize.wait"));
  if (wait.count() == 0) {
    out << "pod/" << name << ": resize " << request.id << " requested\n";
    return 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  json current = *patched;
  while (true) {
    Result<annotations::ResizeStatus> status =
        annotations::ParseResizeStatus(AnnotationOf(current, annotations::kResizeStatus));
    if (status.ok() && status->id == request.id) {
      if (status->granted) {
        out << "pod/" << name << " resized: " << status->message << "\n";
        return 0;
      }
      return fail("pod/" + name + ": resize refused: " + status->message);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    Result<json> again = (*client)->Get(kube::kPods, ns, name);
    if (again.ok()) current = std::move(*again);
  }
  return fail("no answer from the Tessera scheduler within " + config.Describe("resize.wait") +
              " (is it running?); request " + request.id + " stays on pod " + ns + "/" + name +
              " and is answered when the scheduler gets to it");
}

}  // namespace tessera::inspect
