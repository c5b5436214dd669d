#include "scheduler/extender.h"

#include <algorithm>
#include <chrono>
#include <string_view>

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

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends `text` as a JSON string. Plain printable ASCII (every node name, most reasons) is copied
// as it is; anything else goes through the JSON library's escaping.
void AppendString(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += Dump(json(text));
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// ["a","b"]
void AppendNames(std::string& out, const std::vector<std::string>& names) {
  out += '[';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    AppendString(out, names[i]);
  }
  out += ']';
}

// {"node":"reason",...}
void AppendReasons(std::string& out, const std::vector<std::pair<std::string, std::string>>& r) {
  out += '{';
  for (size_t i = 0; i < r.size(); ++i) {
    if (i) out += ',';
    AppendString(out, r[i].first);
    out += ':';
    AppendString(out, r[i].second);
  }
  out += '}';
}

// ExtenderFilterResult, in the form asked: the fitting nodes' objects when the request carried
// full Nodes (`nodes`), else their names.
std::string FilterAnswer(const FilterResult& r, const json* nodes) {
  std::string out = "{\"Nodes\":";
  if (nodes) {
    out += R"({"apiVersion":"v1","kind":"NodeList","items":[)";
    size_t next = 0;  // fits keeps the order of the request
    for (const json& n : *nodes) {
      if (next < r.fits.size() && MetaString(n, "name") == r.fits[next]) {
        if (next) out += ',';
        out += Dump(n);
        ++next;
      }
    }
    out += R"(]},"NodeNames":null)";
  } else {
    out += R"(null,"NodeNames":)";
    AppendNames(out, r.fits);
  }
  out += R"(,"FailedNodes":)";
  AppendReasons(out, r.failed);
  out += R"(,"FailedAndUnresolvableNodes":)";
  AppendReasons(out, r.unresolvable);
  out += R"(,"Error":""})";
  return out;
}

// HostPriorityList: [{"Host":"node","Score":7},...]
std::string PrioritizeAnswer(const std::vector<std::pair<std::string, int>>& scores) {
  std::string out = "[";
  out.reserve(scores.size() * 40);
  for (size_t i = 0; i < scores.size(); ++i) {
    if (i) out += ',';
    out += R"({"Host":)";
    AppendString(out, scores[i].first);
    out += R"(,"Score":)";
    out += std::to_string(scores[i].second);
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace

Extender::Extender(Engine& engine, ClusterState& state, Metrics& metrics, Preemptor* preemptor,
                   FilterMemory* filters)
    : engine_(engine), state_(state), metrics_(metrics), preemptor_(preemptor), filters_(filters) {}

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
    out.names.reserve(names->size());
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

Result<std::string> Extender::Filter(const json& body) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(Args args, ParseArgs(body));
  // Full Nodes are read for their names only: what a client says about a node never changes
  // the state, which comes from the node watch alone.
  FilterResult result;
  if (!args.request.ok()) {
    metrics_.Count(Outcome::kInvalid);
    const std::string why = "invalid GPU request: " + args.request.status().message();
    for (const std::string& n : args.names) result.unresolvable.emplace_back(n, why);
  } else {
    result = engine_.Filter(args.pod, *args.request, args.names);
    if (result.fits.empty()) metrics_.Count(Outcome::kNoFit);
    if (result.fits.empty() && preemptor_ && !result.failed.empty()) {
      std::vector<std::string> failed;
      for (const auto& [name, reason] : result.failed) failed.push_back(name);
      if (auto note = preemptor_->AfterNoFit(args.pod, *args.request, failed)) {
        for (auto& [name, reason] : result.failed) {
          if (name == note->first) reason += "; " + note->second;
        }
      }
    }
    if (filters_ && !args.request->empty()) filters_->Record(args.pod, result);
  }
  std::string out = FilterAnswer(result, args.nodes);
  metrics_.filter_latency.Observe(std::chrono::steady_clock::now() - start);
  return out;
}

Result<std::string> Extender::Prioritize(const json& body) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(Args args, ParseArgs(body));
  std::vector<std::pair<std::string, int>> scores;
  if (!args.request.ok()) {
    for (std::string& n : args.names) scores.emplace_back(std::move(n), 0);
  } else {
    scores = engine_.Prioritize(args.pod, *args.request, args.names);
  }
  std::string out = PrioritizeAnswer(scores);
  metrics_.prioritize_latency.Observe(std::chrono::steady_clock::now() - start);
  return out;
}

Result<std::string> Extender::Bind(const json& body) {
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  ASSIGN_OR_RETURN(std::string name, StringField(body, "PodName", true));
  ASSIGN_OR_RETURN(std::string ns, StringField(body, "PodNamespace", false));
  ASSIGN_OR_RETURN(std::string uid, StringField(body, "PodUID", false));
  ASSIGN_OR_RETURN(std::string node, StringField(body, "Node", true));
  if (name.empty() || node.empty()) return InvalidArgument("\"PodName\" and \"Node\" must be set");
  Status s = engine_.Bind({ns.empty() ? "default" : ns, name, uid}, node);
  return Dump(json{{"Error", s.ok() ? "" : s.message()}});
}

Result<std::string> Extender::Preempt(const json& body) {
  ASSIGN_OR_RETURN(Args args, ParseArgs(body));
  // NodeNameToMetaVictims (nodeCacheCapable) or NodeNameToVictims: node -> {Pods, NumPDBViolations}
  // with each pod as {UID} or as a Pod object.
  std::vector<Preemptor::Candidate> candidates;
  for (const char* key : {"NodeNameToMetaVictims", "NodeNameToVictims"}) {
    const json* map = Field(body, key);
    if (!map) continue;
    if (!map->is_object()) return InvalidArgument(std::string("\"") + key + "\" must be an object");
    for (const auto& [node, victims] : map->items()) {
      Preemptor::Candidate c{node, {}, 0};
      const json* pods = victims.is_object() ? Field(victims, "Pods") : nullptr;
      if (pods && !pods->is_array()) return InvalidArgument("\"Pods\" must be a list");
      for (const json& p : pods ? *pods : json::array()) {
        std::string uid = p.is_object() && p.contains("UID") && p["UID"].is_string()
                              ? p["UID"].get<std::string>()
                              : MetaString(p, "uid");
        if (uid.empty()) return InvalidArgument("a victim of node " + node + " has no UID");
        c.victims.push_back(std::move(uid));
      }
      if (const json* n = victims.is_object() ? Field(victims, "NumPDBViolations") : nullptr) {
        if (n->is_number_integer()) c.pdb_violations = n->get<int64_t>();
      }
      candidates.push_back(std::move(c));
    }
  }
  // ExtenderPreemptionResult: the candidates kept, with their victims as {UID}.
  std::string out = R"({"NodeNameToMetaVictims":{)";
  auto append = [&out](const Preemptor::Candidate& c) {
    if (out.back() != '{') out += ',';
    AppendString(out, c.node);
    out += R"(:{"Pods":[)";
    for (size_t i = 0; i < c.victims.size(); ++i) {
      if (i) out += ',';
      out += R"({"UID":)";
      AppendString(out, c.victims[i]);
      out += '}';
    }
    out += R"(],"NumPDBViolations":)" + std::to_string(c.pdb_violations) + "}";
  };
  if (!preemptor_ || (args.request.ok() && args.request->empty())) {
    // No GPUs to account for: kube-scheduler's candidates stand as they are.
    for (const Preemptor::Candidate& c : candidates) append(c);
  } else if (args.request.ok() && !candidates.empty()) {
    const json* spec = Field(body["Pod"], "spec");
    const json* priority = spec && spec->is_object() ? Field(*spec, "priority") : nullptr;
    int sent = priority && priority->is_number_integer() ? priority->get<int>() : 0;
    if (auto chosen = preemptor_->Choose(args.pod, *args.request, sent, candidates)) {
      append(*chosen);
    }
  }
  out += "}}";
  return out;
}

}  // namespace tessera::scheduler
