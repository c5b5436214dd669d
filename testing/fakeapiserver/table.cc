#include "fakeapiserver/table.h"

#include <ctime>

namespace tessera::testing {

using nlohmann::json;

bool WantsTable(std::string_view accept) {
  return accept.find("as=Table") != std::string_view::npos &&
         accept.find("g=meta.k8s.io") != std::string_view::npos;
}

std::string HumanAge(int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + "s";
  int64_t m = s / 60;
  if (m < 10) return std::to_string(m) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  if (m < 180) return std::to_string(m) + "m";
  int64_t h = m / 60;
  if (h < 48) return std::to_string(h) + "h";
  return std::to_string(h / 24) + "d";
}

namespace {

std::string Age(const json& object) {
  std::string ts = object["metadata"].value("creationTimestamp", "");
  std::tm tm{};
  if (ts.empty() || strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return "<unknown>";
  return HumanAge(static_cast<int64_t>(std::time(nullptr) - timegm(&tm)));
}

json Column(const char* name, const char* type, int priority, const char* description,
            const char* format = "") {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

const json& Get(const json& o, const char* a) {
  static const json kNull;
  return o.is_object() && o.contains(a) ? o[a] : kNull;
}

json PodColumns() {
  return {Column("Name", "string", 0, "Name must be unique within a namespace.", "name"),
          Column("Ready", "string", 0, "The aggregate readiness state of this pod."),
          Column("Status", "string", 0, "The aggregate status of the containers in this pod."),
          Column("Restarts", "string", 0, "The number of times the containers were restarted."),
          Column("Age", "string", 0, "Time since the object was created."),
          Column("IP", "string", 1, "IP address allocated to the pod."),
          Column("Node", "string", 1, "Name of the node the pod is assigned to."),
          Column("Nominated Node", "string", 1, "Name of the node nominated by the scheduler."),
          Column("Readiness Gates", "string", 1, "Pod readiness gates.")};
}

json PodCells(const json& pod) {
  const json& status = Get(pod, "status");
  int total = static_cast<int>(Get(Get(pod, "spec"), "containers").size());
  int ready = 0;
  int64_t restarts = 0;
  for (const json& cs : Get(status, "containerStatuses")) {
    if (cs.value("ready", false)) ++ready;
    restarts += cs.value("restartCount", 0);
  }
  std::string phase = status.value("phase", "Pending");
  if (Get(status, "reason").is_string()) phase = status["reason"].get<std::string>();
  auto or_none = [](const json& v) { return v.is_string() ? v.get<std::string>() : "<none>"; };
  return {pod["metadata"].value("name", ""),
          std::to_string(ready) + "/" + std::to_string(total),
          phase,
          std::to_string(restarts),
          Age(pod),
          or_none(Get(status, "podIP")),
          or_none(Get(Get(pod, "spec"), "nodeName")),
          or_none(Get(status, "nominatedNodeName")),
          "<none>"};
}

json NodeColumns() {
  return {Column("Name", "string", 0, "Name must be unique within a namespace.", "name"),
          Column("Status", "string", 0, "The status of the node"),
          Column("Roles", "string", 0, "The roles of the node"),
          Column("Age", "string", 0, "Time since the object was created."),
          Column("Version", "string", 0, "Kubelet Version reported by the node."),
          Column("Internal-IP", "string", 1, "List of internal IPs for the node."),
          Column("External-IP", "string", 1, "List of external IPs for the node."),
          Column("OS-Image", "string", 1, "OS image reported by the node."),
          Column("Kernel-Version", "string", 1, "Kernel version reported by the node."),
          Column("Container-Runtime", "string", 1, "Container runtime reported by the node.")};
}

json NodeCells(const json& node) {
  const json& status = Get(node, "status");
  std::string ready = "Unknown";
  for (const json& c : Get(status, "conditions")) {
    if (c.value("type", "") == "Ready")
      ready = c.value("status", "") == "True" ? "Ready" : "NotReady";
  }
  if (Get(Get(node, "spec"), "unschedulable") == true) ready += ",SchedulingDisabled";
  std::string roles;
  for (const auto& [k, v] : Get(Get(node, "metadata"), "labels").items()) {
    const std::string prefix = "node-role.kubernetes.io/";
    if (k.rfind(prefix, 0) == 0) roles += (roles.empty() ? "" : ",") + k.substr(prefix.size());
  }
  std::string internal = "<none>", external = "<none>";
  for (const json& a : Get(status, "addresses")) {
    if (a.value("type", "") == "InternalIP") internal = a.value("address", "");
    if (a.value("type", "") == "ExternalIP") external = a.value("address", "");
  }
  const json& info = Get(status, "nodeInfo");
  auto field = [&](const char* f) {
    return Get(info, f).is_string() ? info[f].get<std::string>() : "";
  };
  return {node["metadata"].value("name", ""),
          ready,
          roles.empty() ? "<none>" : roles,
          Age(node),
          field("kubeletVersion"),
          internal,
          external,
          field("osImage"),
          field("kernelVersion"),
          field("containerRuntimeVersion")};
}

json GenericColumns() {
  return {Column("Name", "string", 0, "Name must be unique within a namespace.", "name"),
          Column("Age", "string", 0, "Time since the object was created.")};
}

json RowObject(const json& object, const std::string& include_object) {
  if (include_object == "Object") return object;
  if (include_object == "None") return nullptr;
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", object["metadata"]}};
}

}  // namespace

json RenderTable(const ResourceType& type, const std::vector<ObjectPtr>& objects,
                 const std::string& resource_version, const std::string& include_object) {
  json columns = type.plural == "pods"    ? PodColumns()
                 : type.plural == "nodes" ? NodeColumns()
                                          : GenericColumns();
  json rows = json::array();
  for (const ObjectPtr& o : objects) {
    json cells = type.plural == "pods"    ? PodCells(*o)
                 : type.plural == "nodes" ? NodeCells(*o)
                                          : json{(*o)["metadata"].value("name", ""), Age(*o)};
    json row = {{"cells", cells}};
    json embedded = RowObject(*o, include_object);
    if (!embedded.is_null()) row["object"] = embedded;
    rows.push_back(row);
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", resource_version}}},
          {"columnDefinitions", columns},
          {"rows", rows}};
}

}  // namespace tessera::testing
