#include "demo/example_pod.h"

namespace tessera::demo {

using nlohmann::json;

std::vector<std::string> WorkloadCommand() {
  return {"sh", "-c", "tessera-demo-workload; echo exit=$?; exec sleep 3600"};
}

json ClusterPod(json pod) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return pod;
  json& spec = pod["spec"];
  if (!spec.contains("containers") || !spec["containers"].is_array()) return pod;
  spec["restartPolicy"] = "Never";
  for (json& c : spec["containers"]) {
    if (!c.is_object()) continue;
    c["image"] = kWorkloadImage;
    c["command"] = WorkloadCommand();
    c.erase("args");
    if (!c.contains("resources") || !c["resources"].is_object()) continue;
    for (const char* part : {"limits", "requests"}) {
      if (!c["resources"].contains(part) || !c["resources"][part].is_object()) continue;
      json& list = c["resources"][part];
      list.erase("cpu");
      list.erase("memory");
      if (list.empty()) c["resources"].erase(part);
    }
  }
  return pod;
}

}  // namespace tessera::demo
