#include "fakekubelet/kubelet_loop.h"

#include <filesystem>
#include <fstream>

#include "fakekubelet/fake_cgroups.h"
#include "log/log.h"
#include "node/allocation/pod_view.h"

namespace tessera::fakekubelet {

using nlohmann::json;

KubeletLoop::KubeletLoop(kube::Client& client, FakeKubeletRegistry& registry, Admitter& admitter,
                         FakeDeviceCheckpoint& checkpoint, LoopOptions options)
    : client_(client),
      registry_(registry),
      admitter_(admitter),
      checkpoint_(checkpoint),
      options_(std::move(options)) {}

KubeletLoop::~KubeletLoop() {
  Stop();
}

Status KubeletLoop::Start() {
  Result<json> node = client_.Get(kube::kNodes, "", options_.node);
  if (!node.ok() && node.status().code() == StatusCode::kNotFound) {
    json object = {{"apiVersion", "v1"},
                   {"kind", "Node"},
                   {"metadata", {{"name", options_.node}}},
                   {"status", {{"capacity", json::object()}, {"allocatable", json::object()}}}};
    RETURN_IF_ERROR(client_.Create(kube::kNodes, "", object).status());
  } else if (!node.ok()) {
    return node.status().WithContext("node " + options_.node);
  }
  kube::InformerHandlers handlers;
  handlers.on_add = [this](const json& p) { Enqueue(p); };
  handlers.on_update = [this](const json&, const json& p) { Enqueue(p); };
  handlers.on_delete = [this](const json& p) {
    checkpoint_.ForgetPod(p["metadata"].value("namespace", "default"),
                          p["metadata"].value("name", ""));
  };
  pods_ = std::make_unique<kube::Informer>(
      client_, kube::kPods,
      kube::InformerOptions{.name = "pods of node " + options_.node,
                            .selectors = {.field_selector = "spec.nodeName=" + options_.node}},
      handlers);
  pods_->Start();
  admit_thread_ = std::thread([this] { AdmitLoop(); });
  status_thread_ = std::thread([this] { StatusLoop(); });
  return Status::Ok();
}

void KubeletLoop::Stop() {
  stop_ = true;
  wake_.notify_all();
  if (pods_) pods_->Stop();
  if (admit_thread_.joinable()) admit_thread_.join();
  if (status_thread_.joinable()) status_thread_.join();
  std::vector<std::thread> containers;
  {
    std::lock_guard lock(mu_);
    containers.swap(containers_);
  }
  for (auto& t : containers) t.join();
}

void KubeletLoop::Enqueue(const json& pod) {
  if (node::PodFinished(pod)) return;
  const json& status = pod.contains("status") ? pod["status"] : json::object();
  if (status.value("phase", "Pending") != "Pending") return;
  std::string uid = pod["metadata"].value("uid", "");
  std::lock_guard lock(mu_);
  if (!seen_.insert(uid).second) return;
  queue_.push_back(pod);
  wake_.notify_all();
}

void KubeletLoop::AdmitLoop() {
  while (!stop_) {
    json pod;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(200),
                     [&] { return !queue_.empty() || stop_; });
      if (queue_.empty()) continue;
      pod = std::move(queue_.front());
      queue_.pop_front();
    }
    std::string name =
        pod["metadata"].value("namespace", "default") + "/" + pod["metadata"].value("name", "");
    Result<std::vector<ContainerStart>> starts = admitter_.Allocate(pod);
    if (!starts.ok()) {
      log::Warn("admission failed", {{"pod", name}, {"error", starts.status().message()}});
      SetPhase(pod, "Failed", "UnexpectedAdmissionError", starts.status().message());
      continue;
    }
    log::Info("admitted", {{"pod", name}});
    std::lock_guard lock(mu_);
    containers_.emplace_back(
        [this, pod, s = std::move(*starts)]() mutable { StartContainers(pod, std::move(s)); });
  }
}

namespace {

bool IsInitContainer(const json& pod, const std::string& name) {
  if (!pod["spec"].contains("initContainers")) return false;
  for (const json& c : pod["spec"]["initContainers"]) {
    if (c.value("name", "") == name) return true;
  }
  return false;
}

}  // namespace

void KubeletLoop::StartContainers(json pod, std::vector<ContainerStart> starts) {
  std::string ns = pod["metadata"].value("namespace", "default");
  std::string name = pod["metadata"].value("name", "");
  json containers = {{"initContainerStatuses", json::array()},
                     {"containerStatuses", json::array()}};
  for (ContainerStart& start : starts) {
    Status pre = admitter_.PreStart(pod, start.container);
    if (!pre.ok()) {
      log::Warn("container start failed", {{"pod", ns + "/" + name}, {"error", pre.message()}});
      SetPhase(pod, "Failed", "PreStartContainerFailed", pre.message(), containers);
      return;
    }
    std::string id = ContainerIdFor(pod, start.container);
    if (!options_.cgroup_root.empty()) {
      Result<std::string> dir = MakeContainerCgroup(
          options_.cgroup_root, pod["metadata"].value("uid", ""), QosClassOf(pod), id);
      if (dir.ok()) {
        start.cgroup_dir = *dir;
      } else {
        log::Warn("no cgroup for the container", {{"error", dir.status().message()}});
      }
    }
    json& list = containers[IsInitContainer(pod, start.container) ? "initContainerStatuses"
                                                                  : "containerStatuses"];
    list.push_back(
        {{"name", start.container}, {"containerID", id}, {"state", {{"running", json::object()}}}});
    SetPhase(pod, "Running", "", "", containers);
    Result<RunResult> run =
        Admitter::Run(start, options_.command, options_.command_timeout_s, options_.isolate);
    // The runtime removes the cgroup with the container.
    if (!start.cgroup_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(start.cgroup_dir, ec);
    }
    int exit_code = run.ok() ? run->exit_code : -1;
    list.back()["state"] = {{"terminated", {{"exitCode", exit_code}}}};
    std::string output = run.ok() ? run->output : run.status().ToString() + "\n";
    if (!options_.log_dir.empty()) {
      std::ofstream(options_.log_dir + "/" + ns + "_" + name + "_" + start.container + ".log")
          << output;
    }
    if (!run.ok() || run->exit_code != 0) {
      SetPhase(pod, "Failed", "Error",
               "container " + start.container + " exited with " +
                   (run.ok() ? std::to_string(run->exit_code) : run.status().message()),
               containers);
      return;
    }
  }
  SetPhase(pod, "Succeeded", "", "", containers);
}

void KubeletLoop::SetPhase(const json& pod, const std::string& phase, const std::string& reason,
                           const std::string& message, const json& containers) {
  json status = {{"phase", phase}, {"qosClass", QosClassOf(pod)}};
  if (!reason.empty()) status["reason"] = reason;
  if (!message.empty()) status["message"] = message;
  if (containers.is_object()) status.update(containers);
  Status s = client_
                 .PatchStatus(kube::kPods, pod["metadata"].value("namespace", "default"),
                              pod["metadata"].value("name", ""), status)
                 .status();
  if (!s.ok()) log::Warn("could not report the pod's phase", {{"error", s.message()}});
}

void KubeletLoop::StatusLoop() {
  json last;
  while (!stop_) {
    json counts = json::object();
    for (const std::string& r : registry_.Resources()) {
      Result<PluginState> state = registry_.State(r);
      if (!state.ok()) continue;
      int healthy = 0;
      for (const auto& d : state->devices) healthy += d.health() == "Healthy" ? 1 : 0;
      counts[r] = std::to_string(state->stream_open ? healthy : 0);
    }
    if (counts != last) {
      Status s = client_
                     .PatchStatus(kube::kNodes, "", options_.node,
                                  {{"capacity", counts}, {"allocatable", counts}})
                     .status();
      if (s.ok()) {
        last = counts;
      } else {
        log::Warn("could not report the node's capacity", {{"error", s.message()}});
      }
    }
    for (int i = 0; i < 5 && !stop_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace tessera::fakekubelet
