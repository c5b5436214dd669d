#include "fakekubelet/pod_resources_server.h"

#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "podresources_v1.grpc.pb.h"

namespace tessera::fakekubelet {

class FakePodResources::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(FakePodResources& owner) : owner_(owner) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    std::lock_guard lock(owner_.mu_);
    ++owner_.calls_;
    for (const Entry& e : owner_.entries_) {
      if (!e.listed) continue;
      v1::PodResources* pod = nullptr;
      for (auto& p : *out->mutable_pod_resources()) {
        if (p.name() == e.pod && p.namespace_() == e.ns) pod = &p;
      }
      if (pod == nullptr) {
        pod = out->add_pod_resources();
        pod->set_name(e.pod);
        pod->set_namespace_(e.ns);
      }
      v1::ContainerResources* c = nullptr;
      for (auto& existing : *pod->mutable_containers()) {
        if (existing.name() == e.container) c = &existing;
      }
      if (c == nullptr) {
        c = pod->add_containers();
        c->set_name(e.container);
      }
      // As kubelet answers (containerDevicesFromResourceDeviceInstances in
      // pkg/kubelet/cm/container_manager.go): one entry per device ID.
      for (const std::string& id : e.ids) {
        auto* d = c->add_devices();
        d->set_resource_name(e.resource);
        d->add_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

 private:
  FakePodResources& owner_;
};

FakePodResources::FakePodResources(std::string dir)
    : dir_(std::move(dir)), service_(std::make_unique<Service>(*this)) {}

FakePodResources::~FakePodResources() {
  Stop();
}

Status FakePodResources::Start() {
  std::error_code ec;
  std::filesystem::create_directories(dir_ + "/pod-resources", ec);
  if (ec) return Internal("cannot create " + dir_ + "/pod-resources: " + ec.message());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + SocketPath(), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return Unavailable("cannot serve " + SocketPath());
  return Status::Ok();
}

void FakePodResources::Stop() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
}

void FakePodResources::Record(const std::string& ns, const std::string& pod,
                              const std::string& container, const std::string& resource,
                              const std::vector<std::string>& device_ids, bool listed) {
  std::lock_guard lock(mu_);
  entries_.push_back({ns, pod, container, resource, device_ids, listed});
}

void FakePodResources::ForgetPod(const std::string& ns, const std::string& pod) {
  std::lock_guard lock(mu_);
  std::erase_if(entries_, [&](const Entry& e) { return e.ns == ns && e.pod == pod; });
}

std::vector<std::string> FakePodResources::Used(const std::string& resource) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (e.resource == resource) out.insert(out.end(), e.ids.begin(), e.ids.end());
  }
  return out;
}

int FakePodResources::Calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

}  // namespace tessera::fakekubelet
