#include "scheduler/fit_dry_run.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/quantity.h"
#include "common/strings.h"
#include "scheduler/dialect.h"
#include "scheduler/node_fit.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

// The pod the dry run stands for: its key matches no pod and no nomination.
const PodId kDryRunPod{"", "(would it fit)", ""};
constexpr int kMaxClaimGpus = 64;

Status Unknown(const std::string& where, const std::string& key, const char* allowed) {
  return InvalidArgument(where + ": unknown field \"" + key + "\" (allowed: " + allowed + ")");
}

// A pod (v1 JSON) with the body's containers and annotations, for the dialect parser.
Result<json> PodOf(const json& body, const DialectConfig& dialects) {
  const std::vector<std::string> names = dialects.ResourceNames();
  const std::set<std::string> known(names.begin(), names.end());
  json containers = json::array();
  if (body.contains("resources")) {
    containers.push_back({{"resources", body["resources"]}});
  } else {
    if (!body["containers"].is_array() || body["containers"].empty()) {
      return InvalidArgument(
          "\"containers\" must be a non-empty list of {\"name\", \"init\", \"resources\"}");
    }
    containers = body["containers"];
  }
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "would-it-fit"}, {"namespace", "default"}}},
              {"spec", {{"containers", json::array()}, {"initContainers", json::array()}}}};
  std::set<std::string> seen;
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    // The shorthand's one container has only "resources": its messages name that field alone.
    const std::string where =
        body.contains("resources") ? std::string() : "containers[" + std::to_string(i) + "]";
    const std::string resources_at = where.empty() ? "resources" : where + ".resources";
    if (!c.is_object()) return InvalidArgument(where + " must be an object");
    for (const auto& [key, value] : c.items()) {
      if (key != "name" && key != "init" && key != "resources") {
        return Unknown(where, key, "name, init, resources");
      }
    }
    std::string name = containers.size() == 1 ? "main" : "c" + std::to_string(i);
    if (c.contains("name")) {
      if (!c["name"].is_string() || c["name"].get<std::string>().empty()) {
        return InvalidArgument(where + ".name must be a non-empty string");
      }
      name = c["name"].get<std::string>();
    }
    if (!seen.insert(name).second) {
      return InvalidArgument(where + ": the container name \"" + name + "\" is used twice");
    }
    if (c.contains("init") && !c["init"].is_boolean()) {
      return InvalidArgument(where + ".init must be true or false");
    }
    const json resources = c.value("resources", json());
    if (!resources.is_object() || resources.empty()) {
      return InvalidArgument(resources_at + " must be an object of resource names and " +
                             "quantities, such as {\"nvidia.com/gpu\": \"1\"}; the enabled " +
                             "dialects' resources are " + Join(names, ", "));
    }
    json limits = json::object();
    for (const auto& [resource, value] : resources.items()) {
      if (!known.count(resource)) {
        return InvalidArgument(resources_at + ": \"" + resource +
                               "\" is not a resource of an enabled dialect; those are " +
                               Join(names, ", "));
      }
      if (value.is_string()) {
        limits[resource] = value;
      } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
        limits[resource] = std::to_string(value.get<int64_t>());
      } else {
        return InvalidArgument(resources_at + "[\"" + resource +
                               "\"] must be a quantity string such as \"8Gi\" or \"1\", or a " +
                               "whole number");
      }
    }
    const bool init = c.value("init", false);
    pod["spec"][init ? "initContainers" : "containers"].push_back(
        {{"name", name}, {"resources", {{"limits", limits}}}});
  }
  if (body.contains("annotations")) {
    const json& a = body["annotations"];
    if (!a.is_object()) return InvalidArgument("\"annotations\" must be an object of strings");
    for (const auto& [key, value] : a.items()) {
      if (!value.is_string()) {
        return InvalidArgument("annotations[\"" + key + "\"] must be a string");
      }
    }
    pod["metadata"]["annotations"] = a;
  }
  return pod;
}

// A DRA claim's GPU request as the request model: `count` GPUs, each with `memory` (rounded up
// to the devices' step, as kube-scheduler consumes it; absent: the whole GPU) and `cores`.
Result<PodRequest> ClaimRequest(const json& claim) {
  if (!claim.is_object()) {
    return InvalidArgument("\"claim\" must be an object {\"count\", \"memory\", \"cores\"}");
  }
  for (const auto& [key, value] : claim.items()) {
    if (key != "count" && key != "memory" && key != "cores") {
      return Unknown("claim", key, "count, memory, cores");
    }
  }
  GpuRequest gpu{.count = 1, .dialect = "DRA claim"};
  if (claim.contains("count")) {
    const json& c = claim["count"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > kMaxClaimGpus) {
      return InvalidArgument("claim.count must be a whole number from 1 to " +
                             std::to_string(kMaxClaimGpus) + " (GPUs, each a device of its own)");
    }
    gpu.count = c.get<int>();
  }
  if (claim.contains("memory")) {
    Result<int64_t> bytes = ParseWholeQuantity(claim["memory"]);
    if (!bytes.ok()) {
      return InvalidArgument("claim.memory: " + bytes.status().message() +
                             " (a quantity such as \"8Gi\" or \"1024Mi\")");
    }
    if (*bytes == 0)
      return InvalidArgument("claim.memory must be more than 0; leave it out for the whole GPU");
    const uint64_t step = kDraMemoryStepMiB << 20;
    gpu.memory_mib = (static_cast<uint64_t>(*bytes) + step - 1) / step * kDraMemoryStepMiB;
  }
  if (claim.contains("cores")) {
    Result<int64_t> cores = ParseWholeQuantity(claim["cores"]);
    if (!cores.ok() || *cores > 100) {
      return InvalidArgument(
          "claim.cores must be a whole percent from 0 to 100 (0: no compute "
          "limit), it is " +
          claim["cores"].dump());
    }
    gpu.cores = static_cast<int>(*cores);
  }
  PodRequest request;
  request.containers.push_back({.name = "claim", .gpu = gpu});
  return request;
}

json RequestJson(const PodRequest& request) {
  json out = json::array();
  for (const ContainerRequest& c : request.containers) {
    out.push_back({{"name", c.name}, {"init", c.init}, {"request", c.gpu.Describe()}});
  }
  return out;
}

json RefusalsJson(std::vector<std::pair<std::string, std::string>> failed,
                  std::vector<std::pair<std::string, std::string>> unresolvable) {
  std::vector<std::tuple<std::string, std::string, bool>> all;
  for (auto& [node, reason] : failed) all.emplace_back(std::move(node), std::move(reason), false);
  for (auto& [node, reason] : unresolvable) {
    all.emplace_back(std::move(node), std::move(reason), true);
  }
  std::sort(all.begin(), all.end());
  json out = json::array();
  for (auto& [node, reason, never] : all) {
    out.push_back({{"node", node}, {"reason", reason}, {"unresolvable", never}});
  }
  return out;
}

// The GPUs of `allocation`, one entry per container and device, with the GPU's index and model.
json GpusJson(const Allocation& allocation, const std::vector<GpuSlot>& gpus) {
  json out = json::array();
  for (const auto& c : allocation.containers) {
    for (const auto& d : c.devices) {
      json gpu = {{"container", c.name},
                  {"uuid", d.uuid},
                  {"memoryMiB", d.memory_mib},
                  {"cores", d.cores},
                  {"exclusive", d.exclusive}};
      for (const GpuSlot& g : gpus) {
        if (g.info.uuid == d.uuid) {
          gpu["index"] = g.info.index;
          gpu["model"] = g.info.model;
        }
      }
      out.push_back(std::move(gpu));
    }
  }
  return out;
}

}  // namespace

FitDryRun::FitDryRun(const Engine& engine, const ClusterState& state, const DraShareTable* dra)
    : engine_(engine), state_(state), dra_(dra) {}

Result<json> FitDryRun::Answer(const json& body) const {
  if (!body.is_object()) {
    return InvalidArgument(
        "the request body must be a JSON object with one of \"containers\", "
        "\"resources\" or \"claim\"");
  }
  const int forms =
      body.contains("containers") + body.contains("resources") + body.contains("claim");
  if (forms != 1) {
    return InvalidArgument(
        "the body must have exactly one of \"containers\" (a pod's "
        "containers), \"resources\" (one container) or \"claim\" (a DRA "
        "claim's GPU request); it has " +
        std::to_string(forms));
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "containers" && key != "resources" && key != "claim" && key != "annotations") {
      return Unknown("the body", key, "containers, resources, claim, annotations");
    }
  }
  if (body.contains("claim")) {
    if (body.contains("annotations")) {
      return InvalidArgument(
          "\"annotations\" go with \"containers\" or \"resources\", not with "
          "\"claim\" (a claim selects GPUs by its own selectors)");
    }
    ASSIGN_OR_RETURN(PodRequest request, ClaimRequest(body["claim"]));
    return ForClaim(request);
  }
  ASSIGN_OR_RETURN(json pod, PodOf(body, state_.dialects()));
  ASSIGN_OR_RETURN(PodRequest request, ParsePod(pod, state_.dialects()));
  if (request.empty()) {
    return InvalidArgument(
        "the request asks for no GPU (every resource is 0): give a count, "
        "memory or cores above 0");
  }
  return ForDialects(request);
}

json FitDryRun::ForDialects(const PodRequest& request) const {
  std::vector<std::string> names;
  for (const auto& [name, node] : state_.Snapshot().nodes) names.push_back(name);
  FilterResult filtered = engine_.Filter(kDryRunPod, request, names);
  std::vector<std::pair<std::string, int>> scores =
      engine_.Prioritize(kDryRunPod, request, filtered.fits);
  std::stable_sort(scores.begin(), scores.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json answer = {{"kind", "dialect"},
                 {"request", RequestJson(request)},
                 {"fitting", json::array()},
                 {"gpus", json::array()}};
  const std::string key = kDryRunPod.Key();
  FitScratch scratch;
  FitOutput out;
  for (const auto& [name, score] : scores) {
    answer["fitting"].push_back(name);
    if (answer.contains("node")) continue;
    // The GPU policy on a copy of the node as the filter saw it: what bind would decide now.
    std::vector<GpuSlot> gpus = state_.GpusFor(name, {key, 0});
    FitOptions options{.gpu_policy = engine_.options().gpu_policy, .want_allocation = true};
    if (!Fit(request, gpus, options, scratch, &out)) continue;  // changed since the filter
    answer["node"] = name;
    answer["score"] = score;
    answer["gpus"] = GpusJson(out.allocation, gpus);
  }
  answer["fits"] = answer.contains("node");
  answer["nodes"] = RefusalsJson(std::move(filtered.failed), std::move(filtered.unresolvable));
  return answer;
}

json FitDryRun::ForClaim(const PodRequest& request) const {
  StateSnapshot snapshot = state_.Snapshot();
  if (dra_) {
    for (const DraShare& s : dra_->Snapshot().shares) {
      auto node = snapshot.nodes.find(s.node);
      if (node == snapshot.nodes.end() || !s.gpu_index) continue;
      for (GpuSlot& g : node->second.gpus) {
        if (g.info.index != *s.gpu_index) continue;
        g.used_mib += s.memory_mib.value_or(g.info.virtual_memory_mib());
        g.used_cores += s.cores;
        g.pods += 1;
      }
    }
  }
  json answer = {{"kind", "claim"},
                 {"request", RequestJson(request)},
                 {"fitting", json::array()},
                 {"gpus", json::array()},
                 {"note",
                  "kube-scheduler's DRA allocator places claims, on the nodes whose agent "
                  "publishes a ResourceSlice (node.dra): it chooses among the fitting nodes and "
                  "their devices; \"node\" and \"gpus\" are the first fitting node by name and "
                  "GPUs with room there, counting device-plugin and DRA shares together"}};
  std::vector<std::pair<std::string, std::string>> failed, unresolvable;
  FitScratch scratch;
  const FitOptions check{.gpu_policy = engine_.options().gpu_policy, .want_allocation = true};
  const FitOptions explain{.gpu_policy = engine_.options().gpu_policy, .want_reason = true};
  const FitOptions ever{.gpu_policy = engine_.options().gpu_policy, .ignore_usage = true};
  for (const auto& [name, node] : snapshot.nodes) {
    if (!node.present) {
      unresolvable.emplace_back(name, "node has no usable GPU inventory: " + node.inventory_error);
      continue;
    }
    FitOutput out;
    if (Fit(request, node.gpus, check, scratch, &out)) {
      answer["fitting"].push_back(name);
      if (!answer.contains("node")) {
        answer["node"] = name;
        answer["gpus"] = GpusJson(out.allocation, node.gpus);
      }
      continue;
    }
    Fit(request, node.gpus, explain, scratch, &out);
    (Fit(request, node.gpus, ever, scratch, nullptr) ? failed : unresolvable)
        .emplace_back(name, std::move(out.reason));
  }
  answer["fits"] = answer.contains("node");
  answer["nodes"] = RefusalsJson(std::move(failed), std::move(unresolvable));
  return answer;
}

}  // namespace tessera::scheduler
