#include "node/kubelet/plugin_manager.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "log/log.h"
#include "node/kubelet/device_plugin_service.h"

namespace tessera::node {

struct PluginManager::Plugin {
  ResourceSpec resource;
  std::unique_ptr<DevicePluginService> service;
  std::unique_ptr<grpc::Server> server;
  bool registered = false;
};

namespace {
// Retries of a failed registration: kubelet creates kubelet.sock (the watch's event) before it
// listens on it, so the first try after a restart can be refused, and no second event comes.
// The first retry comes soon (the watch polls every 100 ms): after a node's reboot kubelet admits
// the pods bound to it as soon as it runs, and fails those whose devices no plugin serves yet.
constexpr std::chrono::milliseconds kFirstRetry{100};
constexpr std::chrono::milliseconds kLongestRetry{8000};
}  // namespace

PluginManager::PluginManager(std::string plugin_dir, std::vector<ResourceSpec> resources,
                             int split_count, Allocator& allocator, const DeviceBoard& board,
                             std::function<void(bool)> on_registered)
    : plugin_dir_(std::move(plugin_dir)),
      resources_(std::move(resources)),
      split_count_(split_count),
      allocator_(allocator),
      board_(board),
      on_registered_(std::move(on_registered)) {}

PluginManager::~PluginManager() {
  Stop();
}

std::string PluginManager::SocketPath(const std::string& resource) const {
  return plugin_dir_ + "/" + SocketName(resource);
}

Status PluginManager::Start() {
  // kubelet creates the folder when it starts; an agent that starts first (a fresh node) creates
  // it itself, serves there, and registers when kubelet.sock appears.
  std::error_code ec;
  std::filesystem::create_directories(plugin_dir_, ec);
  if (ec) return ErrnoStatus("create", plugin_dir_, ec.value());
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return ErrnoStatus("inotify_init1 for", plugin_dir_, errno);
  if (::inotify_add_watch(fd, plugin_dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("watch (inotify)", plugin_dir_, err);
  }
  {
    std::lock_guard lock(mu_);
    Status served = ServeAll();
    if (!served.ok()) {
      ::close(fd);
      StopAll();
      return served;
    }
    SetRegistered(RegisterAll());
  }
  stop_ = false;
  watcher_ = std::thread([this, fd] { WatchLoop(fd); });
  return Status::Ok();
}

void PluginManager::Stop() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard lock(mu_);
  SetRegistered(false);
  StopAll();
}

void PluginManager::SetRegistered(bool all) {
  const bool was_all = !unregistered_;
  unregistered_ = !all;
  if (was_all != all && on_registered_) on_registered_(all);
}

Status PluginManager::ServeAll() {
  for (const ResourceSpec& r : resources_) {
    auto p = std::make_unique<Plugin>();
    p->resource = r;
    p->service = std::make_unique<DevicePluginService>(r, split_count_, allocator_, board_);
    std::string path = SocketPath(r.name);
    ::unlink(path.c_str());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    builder.RegisterService(p->service.get());
    p->server = builder.BuildAndStart();
    if (!p->server) {
      return Unavailable("cannot serve the " + r.name + " device plugin on " + path +
                         " (path longer than 107 bytes, or folder not writable?)");
    }
    log::Info("device plugin serving", {{"resource", r.name}, {"socket", path}});
    plugins_.push_back(std::move(p));
  }
  return Status::Ok();
}

void PluginManager::StopAll() {
  for (auto& p : plugins_) {
    p->service->Stop();
    p->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    p->server->Wait();
  }
  plugins_.clear();
}

bool PluginManager::RegisterAll() {
  auto channel = grpc::CreateChannel("unix:" + plugin_dir_ + "/kubelet.sock",
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  bool all = true;
  for (auto& p : plugins_) {
    if (p->registered) continue;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint(SocketName(p->resource.name));
    req.set_resource_name(p->resource.name);
    *req.mutable_options() = DevicePluginService::Options();
    v1beta1::Empty resp;
    grpc::Status s = stub->Register(&ctx, req, &resp);
    if (s.ok()) {
      p->registered = true;
      ++registrations_;
      log::Info("registered with kubelet", {{"resource", p->resource.name}});
    } else {
      all = false;
      log::Warn("kubelet registration failed; trying again, and when kubelet.sock is recreated",
                {{"resource", p->resource.name}, {"error", s.error_message()}});
    }
  }
  return all;
}

void PluginManager::WatchLoop(int fd) {
  alignas(inotify_event) char buf[4096];
  using Clock = std::chrono::steady_clock;
  std::chrono::milliseconds retry = kFirstRetry;
  Clock::time_point next_retry = Clock::now() + retry;
  while (!stop_) {
    pollfd pfd{fd, POLLIN, 0};
    int n = ::poll(&pfd, 1, 100);
    if (n <= 0) {
      std::lock_guard lock(mu_);
      if (!unregistered_ || Clock::now() < next_retry) continue;
      SetRegistered(RegisterAll());
      retry = std::min(retry * 2, kLongestRetry);
      next_retry = Clock::now() + retry;
      continue;
    }
    bool kubelet_restarted = false;
    ssize_t len;
    while ((len = ::read(fd, buf, sizeof(buf))) > 0) {
      for (char* p = buf; p < buf + len;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        if (ev->len > 0 && std::strcmp(ev->name, "kubelet.sock") == 0) kubelet_restarted = true;
        p += sizeof(inotify_event) + ev->len;
      }
    }
    if (!kubelet_restarted || stop_) continue;
    log::Info("kubelet.sock recreated: serving and registering again");
    std::lock_guard lock(mu_);
    SetRegistered(false);
    StopAll();
    Status served = ServeAll();
    if (!served.ok()) {
      log::Error("cannot serve the device plugins again", {{"error", served.message()}});
      continue;
    }
    SetRegistered(RegisterAll());
    retry = kFirstRetry;
    next_retry = Clock::now() + retry;
  }
  ::close(fd);
}

}  // namespace tessera::node
