#include "node/kubelet/device_plugin_service.h"

#include <time.h>

#include <chrono>
#include <cstdint>

#include "log/log.h"

namespace tessera::node {

namespace {

// Logs (at debug) how long one of kubelet's calls took: `us` on the clock, `cpu_us` of this
// thread's CPU time (the agent's own work; the clock also counts waiting for a busy CPU).
class CallTimer {
 public:
  CallTimer(const char* call, const std::string& resource)
      : call_(call),
        resource_(resource),
        start_(std::chrono::steady_clock::now()),
        cpu_start_(ThreadCpuUs()) {}
  ~CallTimer() {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count();
    log::Debug("device plugin call", {{"call", call_},
                                      {"resource", resource_},
                                      {"us", std::to_string(us)},
                                      {"cpu_us", std::to_string(ThreadCpuUs() - cpu_start_)}});
  }

 private:
  static int64_t ThreadCpuUs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
  }
  const char* call_;
  const std::string& resource_;
  std::chrono::steady_clock::time_point start_;
  int64_t cpu_start_;
};

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    default:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  return grpc::Status(code, s.message());
}
}  // namespace

DevicePluginService::DevicePluginService(ResourceSpec resource, int split_count,
                                         Allocator& allocator, const DeviceBoard& board)
    : resource_(std::move(resource)),
      split_count_(split_count),
      allocator_(allocator),
      board_(board) {}

v1beta1::DevicePluginOptions DevicePluginService::Options() {
  v1beta1::DevicePluginOptions o;
  o.set_pre_start_required(true);
  o.set_get_preferred_allocation_available(true);
  return o;
}

v1beta1::ListAndWatchResponse DevicePluginService::DeviceList(
    const std::vector<GpuInfo>& gpus) const {
  v1beta1::ListAndWatchResponse resp;
  for (const GpuInfo& g : gpus) {
    std::vector<DeviceUnit> units = DeviceUnits(resource_, {g}, split_count_);
    for (const DeviceUnit& u : units) {
      v1beta1::Device* d = resp.add_devices();
      d->set_id(u.id);
      d->set_health(g.healthy ? "Healthy" : "Unhealthy");
      if (g.numa >= 0) d->mutable_topology()->add_nodes()->set_id(g.numa);
    }
  }
  return resp;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* out) {
  *out = Options();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* ctx, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  uint64_t sent = 0;
  while (!stopping_ && !ctx->IsCancelled()) {
    DeviceBoard::Snapshot snap = board_.Get();
    if (snap.version != sent) {
      if (!writer->Write(DeviceList(snap.gpus))) return grpc::Status::OK;
      sent = snap.version;
    }
    board_.WaitChange(sent, std::chrono::milliseconds(100));
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* req,
    v1beta1::PreferredAllocationResponse* out) {
  for (const auto& c : req->container_requests()) {
    std::vector<std::string> ids = allocator_.Preferred(
        resource_.name, {c.available_deviceids().begin(), c.available_deviceids().end()},
        {c.must_include_deviceids().begin(), c.must_include_deviceids().end()},
        c.allocation_size());
    auto* r = out->add_container_responses();
    for (const std::string& id : ids) r->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* req,
                                           v1beta1::AllocateResponse* out) {
  CallTimer timer("Allocate", resource_.name);
  for (const auto& c : req->container_requests()) {
    Result<AllocateAnswer> a =
        allocator_.Allocate(resource_.name, {c.devices_ids().begin(), c.devices_ids().end()});
    if (!a.ok()) {
      log::Error("allocate failed",
                 {{"resource", resource_.name}, {"error", a.status().message()}});
      return ToGrpc(a.status());
    }
    auto* r = out->add_container_responses();
    for (const MountSpec& m : a->mounts) {
      auto* mount = r->add_mounts();
      mount->set_container_path(m.container_path);
      mount->set_host_path(m.host_path);
      mount->set_read_only(m.read_only);
    }
    for (const DeviceNode& d : a->devices) {
      auto* dev = r->add_devices();
      dev->set_container_path(d.container_path);
      dev->set_host_path(d.host_path);
      dev->set_permissions("rw");
    }
    for (const auto& [k, v] : a->envs) (*r->mutable_envs())[k] = v;
    if (!a->cdi_device.empty()) r->add_cdi_devices()->set_name(a->cdi_device);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest* req,
                                                    v1beta1::PreStartContainerResponse*) {
  CallTimer timer("PreStartContainer", resource_.name);
  return ToGrpc(
      allocator_.PreStart(resource_.name, {req->devices_ids().begin(), req->devices_ids().end()}));
}

}  // namespace tessera::node
