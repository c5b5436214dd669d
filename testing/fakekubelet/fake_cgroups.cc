#include "fakekubelet/fake_cgroups.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

namespace tessera::fakekubelet {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The container's value of `kind` ("limits" or "requests") for `resource`, "" when absent.
std::string Quantity(const json& container, const char* kind, const char* resource) {
  auto r = container.find("resources");
  if (r == container.end() || !r->contains(kind) || !(*r)[kind].is_object()) return "";
  auto q = (*r)[kind].find(resource);
  if (q == (*r)[kind].end()) return "";
  return q->is_string() ? q->get<std::string>() : q->dump();
}

}  // namespace

std::string QosClassOf(const json& pod) {
  bool any = false, guaranteed = true;
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod.contains("spec") || !pod["spec"].contains(list)) continue;
    for (const json& c : pod["spec"][list]) {
      for (const char* resource : {"cpu", "memory"}) {
        std::string limit = Quantity(c, "limits", resource);
        std::string request = Quantity(c, "requests", resource);
        any = any || !limit.empty() || !request.empty();
        if (limit.empty() || (!request.empty() && request != limit)) guaranteed = false;
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

std::string ContainerIdFor(const json& pod, const std::string& name) {
  if (pod.contains("status")) {
    for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
      if (!pod["status"].contains(list)) continue;
      for (const json& c : pod["status"][list]) {
        if (c.value("name", "") == name && !c.value("containerID", "").empty()) {
          return c["containerID"].get<std::string>();
        }
      }
    }
  }
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mu);
  static const char kHex[] = "0123456789abcdef";
  std::string id = "containerd://";
  for (int i = 0; i < 64; ++i) id += kHex[rng() % 16];
  return id;
}

Result<std::string> MakeContainerCgroup(const std::string& cgroup_root, const std::string& pod_uid,
                                        const std::string& qos_class,
                                        const std::string& container_id) {
  std::string qos_dir = qos_class == "Burstable"    ? "/burstable"
                        : qos_class == "BestEffort" ? "/besteffort"
                                                    : "";
  size_t sep = container_id.find("://");
  std::string id = sep == std::string::npos ? container_id : container_id.substr(sep + 3);
  std::string dir = cgroup_root + "/kubepods" + qos_dir + "/pod" + pod_uid + "/" + id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create the cgroup folder " + dir + ": " + ec.message());
  if (!fs::exists(cgroup_root + "/cgroup.controllers")) {
    std::ofstream(cgroup_root + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
  }
  return dir;
}

}  // namespace tessera::fakekubelet
