#include "fakekubelet/registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "log/log.h"

namespace tessera::fakekubelet {

class FakeKubeletRegistry::Service final : public v1beta1::Registration::Service {
 public:
  explicit Service(FakeKubeletRegistry& owner) : owner_(owner) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    if (owner_.TakeRefusal()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "starting up");
    Status s = owner_.Register(*req);
    if (s.ok()) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, s.message());
  }

 private:
  FakeKubeletRegistry& owner_;
};

FakeKubeletRegistry::FakeKubeletRegistry(std::string dir)
    : dir_(std::move(dir)), service_(std::make_unique<Service>(*this)) {}

FakeKubeletRegistry::~FakeKubeletRegistry() {
  Stop();
}

Status FakeKubeletRegistry::Start() {
  std::error_code ec;
  std::filesystem::create_directories(PluginDir(), ec);
  if (ec) return Internal("cannot create " + PluginDir() + ": " + ec.message());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + PluginDir() + "/kubelet.sock",
                           grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return Unavailable("cannot serve " + PluginDir() + "/kubelet.sock");
  return Status::Ok();
}

void FakeKubeletRegistry::Stop() {
  std::vector<std::thread> followers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [r, ctx] : streams_) ctx->TryCancel();
    followers.swap(followers_);
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }
  for (auto& t : followers) t.join();
  std::lock_guard lock(mu_);
  stopping_ = false;
}

Status FakeKubeletRegistry::Recreate() {
  Stop();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(PluginDir(), ec)) {
    if (e.is_socket()) std::filesystem::remove(e.path(), ec);
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [r, p] : plugins_) p.stream_open = false;
  }
  return Start();
}

void FakeKubeletRegistry::RefuseRegistrations(int count) {
  std::lock_guard lock(mu_);
  refusals_ = count;
}

bool FakeKubeletRegistry::TakeRefusal() {
  std::lock_guard lock(mu_);
  if (refusals_ == 0) return false;
  --refusals_;
  return true;
}

Status FakeKubeletRegistry::Register(const v1beta1::RegisterRequest& req) {
  if (req.version() != "v1beta1") {
    return InvalidArgument("unsupported device plugin API version \"" + req.version() + "\"");
  }
  if (req.resource_name().find('/') == std::string::npos) {
    return InvalidArgument("resource name \"" + req.resource_name() + "\" is not domain-prefixed");
  }
  if (req.endpoint().empty() || req.endpoint().find('/') != std::string::npos) {
    return InvalidArgument("endpoint \"" + req.endpoint() + "\" must be a file name");
  }
  std::string endpoint = PluginDir() + "/" + req.endpoint();
  // As kubelet: dial the plugin (blocking, bounded) and ask its options.
  auto channel = grpc::CreateChannel("unix:" + endpoint, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ctx.set_wait_for_ready(true);
  v1beta1::DevicePluginOptions options;
  grpc::Status s = stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &options);
  if (!s.ok())
    return Unavailable("GetDevicePluginOptions on " + endpoint + ": " + s.error_message());
  std::lock_guard lock(mu_);
  PluginState& p = plugins_[req.resource_name()];
  p.resource = req.resource_name();
  p.endpoint = endpoint;
  p.options = options;
  ++p.registrations;
  int generation = ++generation_[req.resource_name()];
  if (auto it = streams_.find(req.resource_name()); it != streams_.end()) it->second->TryCancel();
  followers_.emplace_back(
      [this, r = req.resource_name(), endpoint, generation] { Follow(r, endpoint, generation); });
  changed_.notify_all();
  return Status::Ok();
}

void FakeKubeletRegistry::Follow(std::string resource, std::string endpoint, int generation) {
  auto channel = grpc::CreateChannel("unix:" + endpoint, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  auto ctx = std::make_shared<grpc::ClientContext>();
  {
    std::lock_guard lock(mu_);
    if (stopping_ || generation_[resource] != generation) return;
    streams_[resource] = ctx;
  }
  auto reader = stub->ListAndWatch(ctx.get(), v1beta1::Empty());
  v1beta1::ListAndWatchResponse msg;
  while (reader->Read(&msg)) {
    std::lock_guard lock(mu_);
    PluginState& p = plugins_[resource];
    p.devices.assign(msg.devices().begin(), msg.devices().end());
    p.last_message_bytes = msg.ByteSizeLong();
    ++p.messages;
    p.stream_open = true;
    changed_.notify_all();
  }
  reader->Finish();
  std::lock_guard lock(mu_);
  if (generation_[resource] == generation) {
    plugins_[resource].stream_open = false;
    streams_.erase(resource);
  }
  changed_.notify_all();
}

std::vector<std::string> FakeKubeletRegistry::Resources() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [r, p] : plugins_) out.push_back(r);
  return out;
}

Result<PluginState> FakeKubeletRegistry::State(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = plugins_.find(resource);
  if (it == plugins_.end()) return NotFound("no plugin registered " + resource);
  return it->second;
}

bool FakeKubeletRegistry::WaitFor(const std::string& resource,
                                  const std::function<bool(const PluginState&)>& pred,
                                  std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] {
    auto it = plugins_.find(resource);
    return it != plugins_.end() && pred(it->second);
  });
}

Result<std::unique_ptr<v1beta1::DevicePlugin::Stub>> FakeKubeletRegistry::Plugin(
    const std::string& resource) const {
  ASSIGN_OR_RETURN(PluginState p, State(resource));
  auto channel = grpc::CreateChannel("unix:" + p.endpoint, grpc::InsecureChannelCredentials());
  return v1beta1::DevicePlugin::NewStub(channel);
}

}  // namespace tessera::fakekubelet
