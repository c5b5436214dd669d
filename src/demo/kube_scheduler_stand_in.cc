#include "demo/kube_scheduler_stand_in.h"

#include <chrono>

#include "demo/http_json.h"
#include "log/log.h"

namespace tessera::demo {

using nlohmann::json;

KubeSchedulerStandIn::KubeSchedulerStandIn(std::string api_url, std::string extender_url,
                                           std::vector<std::string> nodes,
                                           std::string scheduler_name)
    : api_url_(std::move(api_url)),
      extender_url_(std::move(extender_url)),
      nodes_(std::move(nodes)),
      scheduler_name_(std::move(scheduler_name)) {}

KubeSchedulerStandIn::~KubeSchedulerStandIn() {
  Stop();
}

void KubeSchedulerStandIn::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void KubeSchedulerStandIn::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void KubeSchedulerStandIn::Loop() {
  while (!stop_) {
    ScheduleOnce();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

namespace {

// The message kube-scheduler gives an unschedulable pod, with the extender's reasons.
std::string Unschedulable(const json& filtered, size_t node_count) {
  std::string reasons;
  for (const char* field : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    if (!filtered.contains(field) || !filtered[field].is_object()) continue;
    for (const auto& [node, reason] : filtered[field].items()) {
      reasons += (reasons.empty() ? "" : "; ") + node + ": " + reason.get<std::string>();
    }
  }
  return "0/" + std::to_string(node_count) + " nodes are available: " + reasons + ".";
}

}  // namespace

void KubeSchedulerStandIn::ScheduleOnce() {
  HttpJson api(api_url_);
  HttpJson extender(extender_url_);
  Result<json> pods =
      api.Get("/api/v1/pods?fieldSelector=" + QueryEscape("spec.schedulerName=" + scheduler_name_ +
                                                          ",spec.nodeName=,status.phase=Pending"));
  if (!pods.ok()) {
    log::Warn("kube-scheduler stand-in: cannot list pods", {{"error", pods.status().message()}});
    return;
  }
  for (const json& pod : (*pods)["items"]) {
    const json& meta = pod["metadata"];
    std::string ns = meta.value("namespace", "default");
    std::string name = meta.value("name", "");
    json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes_}};
    Result<json> filtered = extender.Post("/filter", args);
    if (!filtered.ok()) {
      log::Warn("kube-scheduler stand-in: filter failed", {{"error", filtered.status().message()}});
      continue;
    }
    std::vector<std::string> feasible;
    if ((*filtered)["NodeNames"].is_array()) feasible = (*filtered)["NodeNames"];
    if (feasible.empty()) {
      std::string message = filtered->value("Error", "");
      if (message.empty()) message = Unschedulable(*filtered, nodes_.size());
      json condition = {{"type", "PodScheduled"},
                        {"status", "False"},
                        {"reason", "Unschedulable"},
                        {"message", message}};
      bool same = false;
      for (const json& c : pod["status"].value("conditions", json::array())) {
        same = same || (c.value("type", "") == "PodScheduled" && c.value("message", "") == message);
      }
      if (!same) {
        Result<json> patched =
            api.MergePatch("/api/v1/namespaces/" + ns + "/pods/" + name + "/status",
                           {{"status", {{"conditions", json::array({condition})}}}});
        if (!patched.ok()) {
          log::Warn("kube-scheduler stand-in: cannot record the reason",
                    {{"error", patched.status().message()}});
        }
      }
      continue;
    }
    args["NodeNames"] = feasible;
    Result<json> scores = extender.Post("/prioritize", args);
    if (!scores.ok()) continue;
    std::string best = feasible.front();
    int best_score = -1;
    for (const json& s : *scores) {
      if (s.value("Score", 0) > best_score) {
        best_score = s.value("Score", 0);
        best = s.value("Host", best);
      }
    }
    Result<json> bound = extender.Post("/bind", {{"PodName", name},
                                                 {"PodNamespace", ns},
                                                 {"PodUID", meta.value("uid", "")},
                                                 {"Node", best}});
    if (!bound.ok() || !bound->value("Error", "").empty()) {
      log::Warn("kube-scheduler stand-in: bind failed",
                {{"pod", ns + "/" + name},
                 {"error", bound.ok() ? bound->value("Error", "") : bound.status().message()}});
    }
  }
}

}  // namespace tessera::demo
