#include "node/dra/dra_plugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "log/log.h"
#include "node/dra/dra_service.h"
#include "node/dra/health_service.h"
#include "node/dra/registration_service.h"

namespace tessera::node::dra {

namespace {

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

DraPlugin::DraPlugin(DraPluginOptions options, DraDriver& driver, const DeviceBoard& board)
    : options_(std::move(options)), driver_(driver), board_(board) {}

DraPlugin::~DraPlugin() {
  Stop();
}

std::string DraPlugin::ServiceSocket() const {
  return options_.kubelet_dir + "/plugins/" + kDriverName + "/dra.sock";
}

std::string DraPlugin::RegistrationSocket() const {
  return options_.kubelet_dir + "/plugins_registry/" + kDriverName + "-reg.sock";
}

Status DraPlugin::Start() {
  RETURN_IF_ERROR(driver_.Init());
  {
    std::lock_guard lock(mu_);
    Status served = Serve();
    if (!served.ok()) {
      StopServing();
      return served;
    }
  }
  stop_ = false;
  checker_ = std::thread([this] { CheckLoop(); });
  return Status::Ok();
}

void DraPlugin::Stop() {
  stop_ = true;
  if (checker_.joinable()) checker_.join();
  std::lock_guard lock(mu_);
  StopServing();
}

Status DraPlugin::Serve() {
  for (const std::string& path : {ServiceSocket(), RegistrationSocket()}) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) return ErrnoStatus("create the folder of", path, ec.value());
    ::unlink(path.c_str());
  }
  // Fresh services for each server (the old ones' streams were ended by StopServing).
  dra_ = std::make_unique<DraService>(driver_);
  health_ = std::make_unique<HealthService>(options_.pool, board_, options_.health_resend);
  registration_ = std::make_unique<RegistrationService>(
      kDriverName, ServiceSocket(),
      [this](bool registered, const std::string&) { registered_ = registered; });
  grpc::ServerBuilder service;
  service.AddListeningPort("unix:" + ServiceSocket(), grpc::InsecureServerCredentials());
  service.RegisterService(dra_.get());
  service.RegisterService(health_.get());
  service_server_ = service.BuildAndStart();
  if (!service_server_) {
    return Unavailable("cannot serve the DRA plugin on " + ServiceSocket() +
                       " (path longer than 107 bytes, or folder not writable?)");
  }
  grpc::ServerBuilder registration;
  registration.AddListeningPort("unix:" + RegistrationSocket(), grpc::InsecureServerCredentials());
  registration.RegisterService(registration_.get());
  registration_server_ = registration.BuildAndStart();
  if (!registration_server_) {
    return Unavailable("cannot serve the DRA plugin's registration on " + RegistrationSocket() +
                       " (path longer than 107 bytes, or folder not writable?)");
  }
  ++serves_;
  log::Info("DRA plugin serving", {{"driver", kDriverName},
                                   {"service", ServiceSocket()},
                                   {"registration", RegistrationSocket()}});
  return Status::Ok();
}

void DraPlugin::StopServing() {
  registered_ = false;
  if (health_) health_->Stop();
  // The registration socket first: kubelet deregisters the plugin when it disappears.
  for (auto* server : {&registration_server_, &service_server_}) {
    if (!*server) continue;
    (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    (*server)->Wait();
    server->reset();
  }
  ::unlink(RegistrationSocket().c_str());
  ::unlink(ServiceSocket().c_str());
}

// Polls rather than inotify: the sockets are in two folders, either of which may be removed whole.
void DraPlugin::CheckLoop() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point next = Clock::now() + options_.socket_check;
  while (!stop_) {
    // Short sleeps to notice Stop; a check every socket_check.
    std::this_thread::sleep_for(std::min(options_.socket_check, std::chrono::milliseconds(100)));
    if (Clock::now() < next) continue;
    next = Clock::now() + options_.socket_check;
    if (IsSocket(ServiceSocket()) && IsSocket(RegistrationSocket())) continue;
    log::Info("a DRA plugin socket was removed: serving both again",
              {{"service", ServiceSocket()}, {"registration", RegistrationSocket()}});
    std::lock_guard lock(mu_);
    StopServing();
    if (Status s = Serve(); !s.ok()) {
      log::Error("cannot serve the DRA plugin again; trying again", {{"error", s.message()}});
    }
  }
}

}  // namespace tessera::node::dra
