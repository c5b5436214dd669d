#include "node/dra/dra_plugin.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

// Whether a process listens on the unix socket `path` (a connection is refused when none does).
bool Answers(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return true;  // not ours to judge
  // Non-blocking: a listener whose backlog is full answers EAGAIN, not a wait.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return true;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  bool refused =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return !refused;
}

// Removes the sockets in `dir` named <prefix>...<suffix> that no process listens on, but `own`.
void RemoveDeadSockets(const std::string& dir, const std::string& prefix, const std::string& suffix,
                       const std::string& own) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string(), path = entry.path().string();
    if (path == own || name.size() < prefix.size() + suffix.size() ||
        name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0 || !IsSocket(path) ||
        Answers(path)) {
      continue;
    }
    ::unlink(path.c_str());
    log::Info(
        "removed a DRA plugin socket that no process serves (an instance that did not stop "
        "cleanly)",
        {{"socket", path}});
  }
}

}  // namespace

DraPlugin::DraPlugin(DraPluginOptions options, DraDriver& driver, const DeviceBoard& board)
    : options_(std::move(options)), driver_(driver), board_(board) {}

DraPlugin::~DraPlugin() {
  Stop();
}

std::string DraPlugin::ServiceSocket() const {
  return ServiceDir() + "/dra" + InstanceSuffix() + ".sock";
}

std::string DraPlugin::RegistrationSocket() const {
  return RegistryDir() + "/" + kDriverName + InstanceSuffix() + "-reg.sock";
}

std::string DraPlugin::ServiceDir() const {
  return options_.kubelet_dir + "/plugins/" + kDriverName;
}

std::string DraPlugin::RegistryDir() const {
  return options_.kubelet_dir + "/plugins_registry";
}

std::string DraPlugin::InstanceSuffix() const {
  return options_.instance_uid.empty() ? "" : "-" + options_.instance_uid;
}

Status DraPlugin::Start() {
  const std::string& uid = options_.instance_uid;
  if (uid.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
          std::string::npos ||
      uid.size() > 63) {
    return InvalidArgument("node.dra.instance-uid \"" + uid +
                           "\": letters, digits, '-', '_' and '.' only, at most 63 (a pod's UID)");
  }
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
  // gpu.tessera.io-reg.sock, gpu.tessera.io-<uid>-reg.sock; dra.sock, dra-<uid>.sock.
  RemoveDeadSockets(RegistryDir(), std::string(kDriverName) + "-", "reg.sock",
                    RegistrationSocket());
  RemoveDeadSockets(ServiceDir(), "dra", ".sock", ServiceSocket());
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
