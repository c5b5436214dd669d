#include "scheduler/extender.h"

#include <chrono>

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

const json* Field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string MetaString(const json& object, const char* key) {
  const json* metadata = Field(object, "metadata");
  if (!metadata || !metadata->is_object()) return "";
  const json* v = Field(*metadata, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

Result<std::string> StringField(const json& args, const char* key, bool required) {
  const json* v = Field(args, key);
  if (!v) {
    if (required) return InvalidArgument(std::string("\"") + key + "\" is missing");
    return std::string();
  }
  if (!v->is_string()) return InvalidArgument(std::string("\"") + key + "\" must be a string");
  return v->get<std::string>();
}

}  // namespace

Extender::Extender(Engine& engine, ClusterState& state, Metrics& metrics)
    : engine_(engine), state_(state), metrics_(metrics) {}

Result<Extender::Args> Extender::ParseArgs(const json& args) {
  if (!args.is_object()) return InvalidArgument("the request body must be a JSON object");
  const json* pod = Field(args, "Pod");
  if (!pod) return InvalidArgument("\"Pod\" is missing");
  if (!pod->is_object()) return InvalidArgument("\"Pod\" must be a Pod object");
  Args out;
  out.pod = {MetaString(*pod, "namespace"), MetaString(*pod, "name"), MetaString(*pod, "uid")};
  if (out.pod.name.empty()) return InvalidArgument("\"Pod\" has no metadata.name");
  if (out.pod.ns.empty()) out.pod.ns = "default";
  if (const json* names = Field(args, "NodeNames")) {
    if (!names->is_array()) return InvalidArgument("\"NodeNames\" must be a list of node names");
    for (const json& n : *names) {
      if (!n.is_string()) return InvalidArgument("\"NodeNames\" must hold strings only");
      out.names.push_back(n.get<std::string>());
    }
  } else if (const json* nodes = Field(args, "Nodes")) {
    if (!nodes->is_object()) return InvalidArgument("\"Nodes\" must be a NodeList object");
    if (const json* items = Field(*nodes, "items")) {
      if (!items->is_array()) return InvalidArgument("\"Nodes.items\" must be a list");
      for (const json& n : *items) {
        std::string name = n.is_object() ? MetaString(n, "name") : "";
        if (name.empty()) return InvalidArgument("a node in \"Nodes.items\" has no metadata.name");
        out.names.push_back(std::move(name));
      }
      out.nodes = items;
    }
  }
  out.request = ParsePod(*pod, state_.dialects());
  return out;
}

Result<json> Extender::Filter(const json& body) {
  auto start = std::chrono::steady_clock::now();
  Result<Args> parsed = ParseArgs(body);
  if (!parsed.ok()) return parsed.status();
  Args& args = *parsed;
  if (args.nodes) {
    // Full node objects: keep their inventory current (nodeCacheCapable: false setups).
    for (const json& n : *args.nodes) (void)state_.OnNode(EventType::kModified, n);
  }
  json failed = json::object();
  json unresolvable = json::object();
  std::vector<std::string> fits;
  if (!args.request.ok()) {
    metrics_.Count(Outcome::kInvalid);
    for (const std::string& n : args.names) {
      unresolvable[n] = "invalid GPU request: " + args.request.status().message();
    }
  } else {
    state_.RememberPending(args.pod, *args.request);
    FilterResult r = engine_.Filter(*args.request, args.names);
    for (auto& [n, why] : r.failed) failed[n] = why;
    for (auto& [n, why] : r.unresolvable) unresolvable[n] = why;
    fits = std::move(r.fits);
    if (fits.empty()) metrics_.Count(Outcome::kNoFit);
  }
  json out = {{"FailedNodes", failed}, {"FailedAndUnresolvableNodes", unresolvable}, {"Error", ""}};
  if (args.nodes) {
    json items = json::array();
    size_t next = 0;  // fits keeps the order of the request
    for (const json& n : *args.nodes) {
      if (next < fits.size() && MetaString(n, "name") == fits[next]) {
        items.push_back(n);
        ++next;
      }
    }
    out["Nodes"] = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", items}};
    out["NodeNames"] = nullptr;
  } else {
    out["Nodes"] = nullptr;
    out["NodeNames"] = fits;
  }
  metrics_.filter_latency.Observe(std::chrono::steady_clock::now() - start);
  return out;
}

Result<json> Extender::Prioritize(const json& body) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(Args args, ParseArgs(body));
  json out = json::array();
  if (!args.request.ok()) {
    for (const std::string& n : args.names) out.push_back({{"Host", n}, {"Score", 0}});
  } else {
    for (auto& [n, score] : engine_.Prioritize(*args.request, args.names)) {
      out.push_back({{"Host", n}, {"Score", score}});
    }
  }
  metrics_.prioritize_latency.Observe(std::chrono::steady_clock::now() - start);
  return out;
}

Result<json> Extender::Bind(const json& body) {
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  ASSIGN_OR_RETURN(std::string name, StringField(body, "PodName", true));
  ASSIGN_OR_RETURN(std::string ns, StringField(body, "PodNamespace", false));
  ASSIGN_OR_RETURN(std::string uid, StringField(body, "PodUID", false));
  ASSIGN_OR_RETURN(std::string node, StringField(body, "Node", true));
  if (name.empty() || node.empty()) return InvalidArgument("\"PodName\" and \"Node\" must be set");
  Status s = engine_.Bind({ns.empty() ? "default" : ns, name, uid}, node);
  return json{{"Error", s.ok() ? "" : s.message()}};
}

}  // namespace tessera::scheduler
