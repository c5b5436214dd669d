#include "kube/leader_elector.h"

#include <cmath>

#include "kube/api_error.h"
#include "log/log.h"

namespace tessera::kube {

namespace {

int64_t CeilSeconds(std::chrono::milliseconds d) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(d.count()) / 1000.0));
}

// Call options whose timeout ends the call by `deadline` (at least 1 ms: 0 would mean "default").
CallOptions Until(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return CallOptions{.timeout = std::max(left, std::chrono::milliseconds(1))};
}

}  // namespace

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)) {}

Result<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client,
                                                             LeaderElectionConfig config) {
  if (config.lease_name.empty() || config.lease_namespace.empty() || config.identity.empty()) {
    return InvalidArgument("leader election needs a lease name, a lease namespace and an identity");
  }
  if (!(config.retry_period.count() > 0 && config.retry_period < config.renew_deadline &&
        config.renew_deadline < config.lease_duration)) {
    return InvalidArgument(
        "leader election durations must satisfy 0 < retry period < renew deadline < lease "
        "duration (got " +
        std::to_string(config.retry_period.count()) + "ms, " +
        std::to_string(config.renew_deadline.count()) + "ms, " +
        std::to_string(config.lease_duration.count()) + "ms)");
  }
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config)));
}

LeaderElector::~LeaderElector() {
  Stop();
}

void LeaderElector::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true);
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string LeaderElector::Leader() const {
  std::lock_guard lock(mutex_);
  return observed_holder_;
}

bool LeaderElector::RenewalOverdue(std::chrono::milliseconds tolerance) const {
  if (!leading_.load()) return false;
  const std::chrono::steady_clock::time_point last{
      std::chrono::steady_clock::duration(last_renew_.load())};
  return std::chrono::steady_clock::now() - last > config_.lease_duration + tolerance;
}

bool LeaderElector::Pause(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !stop_signal_.wait_for(lock, delay, [&] { return stopping_.load(); });
}

bool LeaderElector::TryAcquireOrRenew(std::chrono::steady_clock::time_point deadline) {
  const std::string now = Rfc3339Now(true);
  Json spec = {{"holderIdentity", config_.identity},
               {"leaseDurationSeconds", CeilSeconds(config_.lease_duration)},
               {"renewTime", now}};

  Result<Json> current =
      client_.Get(kLeases, config_.lease_namespace, config_.lease_name, Until(deadline));
  if (current.status().code() == StatusCode::kNotFound) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = 0;
    Json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", spec}};
    Result<Json> created = client_.Create(kLeases, config_.lease_namespace, lease, Until(deadline));
    if (!created.ok()) {
      log::Debug("creating the lease failed", {{"error", created.status().message()}});
      return false;
    }
    std::lock_guard lock(mutex_);
    observed_holder_ = config_.identity;
    return true;
  }
  if (!current.ok()) {
    log::Debug("reading the lease failed", {{"error", current.status().message()}});
    return false;
  }

  Json lease = std::move(*current);
  const Json old_spec = lease.value("spec", Json::object());
  std::string holder = old_spec.value("holderIdentity", "");
  std::string record = old_spec.dump();
  auto observed_now = std::chrono::steady_clock::now();
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = observed_now;
  }
  {
    std::lock_guard lock(mutex_);
    observed_holder_ = holder;
  }
  if (!holder.empty() && holder != config_.identity) {
    int64_t seconds = old_spec.value("leaseDurationSeconds", CeilSeconds(config_.lease_duration));
    if (observed_now - observed_at_ < std::chrono::seconds(seconds)) return false;  // still held
  }

  int64_t transitions = old_spec.value("leaseTransitions", 0);
  if (holder == config_.identity) {
    spec["acquireTime"] = old_spec.value("acquireTime", now);
    spec["leaseTransitions"] = transitions;
  } else {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = transitions + 1;
  }
  lease["spec"] = spec;  // metadata.resourceVersion stays: the update's precondition
  Result<Json> updated = client_.Update(kLeases, lease, Until(deadline));
  if (!updated.ok()) {
    log::Debug("updating the lease failed", {{"error", updated.status().message()}});
    return false;
  }
  observed_record_ = updated->value("spec", Json::object()).dump();
  observed_at_ = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  observed_holder_ = config_.identity;
  return true;
}

void LeaderElector::Release() {
  const CallOptions call{.timeout = config_.renew_deadline};
  Result<Json> current = client_.Get(kLeases, config_.lease_namespace, config_.lease_name, call);
  if (!current.ok()) {
    log::Warn("releasing the lease: reading it failed", {{"error", current.status().message()}});
    return;
  }
  Json lease = std::move(*current);
  if (lease.value("spec", Json::object()).value("holderIdentity", "") != config_.identity) return;
  const std::string now = Rfc3339Now(true);
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = now;
  Result<Json> updated = client_.Update(kLeases, lease, call);
  if (!updated.ok()) {
    log::Warn("releasing the lease failed", {{"error", updated.status().message()}});
    return;
  }
  std::lock_guard lock(mutex_);
  observed_holder_.clear();
}

void LeaderElector::Run() {
  using Clock = std::chrono::steady_clock;
  const std::string lease = config_.lease_namespace + "/" + config_.lease_name;
  while (!stopping_.load()) {
    while (!stopping_.load() && !TryAcquireOrRenew(Clock::now() + config_.renew_deadline)) {
      if (!Pause(config_.retry_period)) break;
    }
    if (stopping_.load()) break;

    last_renew_.store(Clock::now().time_since_epoch().count());
    leading_.store(true);
    log::Info("became leader", {{"lease", lease}, {"identity", config_.identity}});
    if (config_.on_started_leading) config_.on_started_leading();
    // Leadership is counted from the start of the last successful renewal: the server may have
    // recorded it as early as that. Every renewal attempt must end before the renew deadline.
    auto last_renew = Clock::now();
    while (Pause(config_.retry_period)) {
      auto attempt = Clock::now();
      auto deadline = last_renew + config_.renew_deadline;
      if (attempt < deadline && TryAcquireOrRenew(deadline)) {
        last_renew = attempt;
        last_renew_.store(attempt.time_since_epoch().count());
      } else if (Clock::now() >= deadline) {
        log::Warn("lost leadership: could not renew the lease in time",
                  {{"lease", lease}, {"identity", config_.identity}});
        break;
      }
    }
    leading_.store(false);
    // The work guarded by the lease ends before the lease is handed over, never after.
    if (config_.on_stopped_leading) config_.on_stopped_leading();
    if (stopping_.load() && config_.release_on_stop) Release();
  }
}

}  // namespace tessera::kube
