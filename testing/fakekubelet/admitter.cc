#include "fakekubelet/admitter.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include <grpcpp/grpcpp.h>

#include "node/allocation/pod_view.h"

extern char** environ;

namespace tessera::fakekubelet {

using nlohmann::json;

namespace {

std::string Key(const json& pod, const std::string& container) {
  return pod["metadata"].value("namespace", "default") + "/" + pod["metadata"].value("name", "") +
         "/" + container;
}

// Init containers first, then the others.
std::vector<const json*> ContainersInOrder(const json& pod) {
  std::vector<const json*> out;
  const json& spec = pod["spec"];
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list)) continue;
    for (const json& c : spec[list]) out.push_back(&c);
  }
  return out;
}

std::unique_ptr<grpc::ClientContext> Deadline(int seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

}  // namespace

Admitter::Admitter(FakeKubeletRegistry& registry, FakeDeviceCheckpoint& checkpoint)
    : registry_(registry), checkpoint_(checkpoint) {}

Result<std::vector<std::string>> Admitter::ChooseDevices(const std::string& resource,
                                                         int64_t count) {
  ASSIGN_OR_RETURN(PluginState state, registry_.State(resource));
  std::vector<std::string> used = checkpoint_.Used(resource);
  std::set<std::string> taken(used.begin(), used.end());
  std::vector<std::string> free;
  for (const auto& d : state.devices) {
    if (d.health() == "Healthy" && taken.count(d.id()) == 0) free.push_back(d.id());
  }
  if (static_cast<int64_t>(free.size()) < count) {
    return ResourceExhausted("UnexpectedAdmissionError: " + resource + ": " +
                             std::to_string(count) + " asked, " + std::to_string(free.size()) +
                             " free and healthy");
  }
  if (state.options.get_preferred_allocation_available()) {
    ASSIGN_OR_RETURN(auto stub, registry_.Plugin(resource));
    v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (const std::string& id : free) c->add_available_deviceids(id);
    c->set_allocation_size(static_cast<int32_t>(count));
    v1beta1::PreferredAllocationResponse resp;
    grpc::Status s = stub->GetPreferredAllocation(Deadline(10).get(), req, &resp);
    if (s.ok() && resp.container_responses_size() == 1) {
      const auto& ids = resp.container_responses(0).deviceids();
      std::set<std::string> free_set(free.begin(), free.end());
      std::vector<std::string> chosen(ids.begin(), ids.end());
      bool valid = static_cast<int64_t>(chosen.size()) == count &&
                   std::all_of(chosen.begin(), chosen.end(),
                               [&](const std::string& id) { return free_set.count(id) > 0; });
      if (valid) return chosen;
    }
  }
  free.resize(static_cast<size_t>(count));
  return free;
}

Result<std::vector<ContainerStart>> Admitter::Allocate(const json& pod) {
  std::lock_guard admit(admit_mu_);
  std::string ns = pod["metadata"].value("namespace", "default");
  std::string name = pod["metadata"].value("name", "");
  std::vector<ContainerStart> out;
  std::vector<std::string> resources = registry_.Resources();
  for (const json* c : ContainersInOrder(pod)) {
    ContainerStart start;
    start.container = c->value("name", "");
    for (const std::string& resource : resources) {
      int64_t n = node::ContainerRequest(*c, resource);
      if (n <= 0) continue;
      Result<std::vector<std::string>> ids = ChooseDevices(resource, n);
      if (!ids.ok()) {
        checkpoint_.ForgetPod(ns, name);
        return ids.status().WithContext("pod " + ns + "/" + name);
      }
      ASSIGN_OR_RETURN(auto stub, registry_.Plugin(resource));
      v1beta1::AllocateRequest req;
      auto* cr = req.add_container_requests();
      for (const std::string& id : *ids) cr->add_devices_ids(id);
      v1beta1::AllocateResponse resp;
      grpc::Status s = stub->Allocate(Deadline(10).get(), req, &resp);
      if (!s.ok() || resp.container_responses_size() != 1) {
        checkpoint_.ForgetPod(ns, name);
        return Unavailable("UnexpectedAdmissionError: pod " + ns + "/" + name + ": Allocate of " +
                           resource + " failed: " + s.error_message());
      }
      const auto& r = resp.container_responses(0);
      // As kubelet (deviceRunContainerOptions): the first answer's env and mount at a path win.
      for (const auto& [k, v] : r.envs()) start.envs.emplace(k, v);
      for (const auto& m : r.mounts()) start.mounts.emplace(m.container_path(), m.host_path());
      for (const auto& d : r.cdi_devices()) start.cdi_devices.push_back(d.name());
      checkpoint_.Record(ns, name, pod["metadata"].value("uid", ""), start.container, resource,
                         *ids, r.SerializeAsString());
      std::lock_guard lock(mu_);
      allocated_[Key(pod, start.container)][resource] = *ids;
    }
    if (auto it = start.mounts.find("/var/run/tessera"); it != start.mounts.end()) {
      start.limits_file = it->second + "/limits";
    }
    out.push_back(std::move(start));
  }
  return out;
}

Status Admitter::PreStart(const json& pod, const std::string& container) {
  std::map<std::string, std::vector<std::string>> devices;
  {
    std::lock_guard lock(mu_);
    devices = allocated_[Key(pod, container)];
  }
  for (const auto& [resource, ids] : devices) {
    ASSIGN_OR_RETURN(PluginState state, registry_.State(resource));
    if (!state.options.pre_start_required()) continue;
    ASSIGN_OR_RETURN(auto stub, registry_.Plugin(resource));
    v1beta1::PreStartContainerRequest req;
    for (const std::string& id : ids) req.add_devices_ids(id);
    v1beta1::PreStartContainerResponse resp;
    grpc::Status s = stub->PreStartContainer(Deadline(30).get(), req, &resp);
    if (!s.ok()) {
      return FailedPrecondition("PreStartContainer of " + resource + " for " + Key(pod, container) +
                                ": " + s.error_message());
    }
  }
  return Status::Ok();
}

Result<std::vector<ContainerStart>> Admitter::Admit(const json& pod) {
  ASSIGN_OR_RETURN(std::vector<ContainerStart> starts, Allocate(pod));
  for (const ContainerStart& s : starts) RETURN_IF_ERROR(PreStart(pod, s.container));
  return starts;
}

namespace {

// The (target, host path) binds of the container's /var/run mounts, computed before fork.
std::vector<std::pair<std::string, std::string>> RunBinds(const ContainerStart& start) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [container_path, host_path] : start.mounts) {
    if (container_path.rfind("/var/run/", 0) == 0) {
      out.emplace_back("/run/" + container_path.substr(9), host_path);
    }
  }
  return out;
}

// In the child, before exec (system calls only): a private mount namespace with a tmpfs on /run
// and `binds`. Returns false when the machine does not allow it.
bool IsolateMounts(const std::vector<std::pair<std::string, std::string>>& binds) {
  if (::unshare(CLONE_NEWNS) != 0) return false;
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (::mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") != 0) return false;
  for (const auto& [target, host] : binds) {
    ::mkdir(target.c_str(), 0755);
    if (::mount(host.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) return false;
  }
  return true;
}

}  // namespace

Result<RunResult> Admitter::Run(const ContainerStart& start, const std::string& command,
                                int timeout_s, bool isolate) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& [k, v] : start.envs) env.push_back(k + "=" + v);
  if (!start.limits_file.empty()) env.push_back("TESSERA_LIMITS_FILE=" + start.limits_file);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::vector<std::pair<std::string, std::string>> binds = RunBinds(start);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return ErrnoStatus("pipe for", command, errno);
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork for", command, errno);
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    if (isolate && !IsolateMounts(binds)) {
      static const char kNote[] = "fake kubelet: no private mount namespace here\n";
      [[maybe_unused]] ssize_t n = ::write(2, kNote, sizeof(kNote) - 1);
    }
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    ::execve("/bin/sh", const_cast<char**>(argv), envp.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  if (!start.cgroup_dir.empty()) {
    std::ofstream(start.cgroup_dir + "/cgroup.procs", std::ios::app) << pid << "\n";
  }
  RunResult result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buf[4096];
  bool killed = false;
  while (true) {
    pollfd pfd{pipefd[0], POLLIN, 0};
    int n = ::poll(&pfd, 1, 100);
    if (n > 0) {
      ssize_t len = ::read(pipefd[0], buf, sizeof(buf));
      if (len <= 0) break;
      result.output.append(buf, static_cast<size_t>(len));
    }
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (killed) return Status(StatusCode::kDeadlineExceeded, "command timed out: " + command);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace tessera::fakekubelet
