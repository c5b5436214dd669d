// The scheduler's configuration rules that no single key's type or bounds can say: each one
// catches a configuration that would load and then fail at run time (every POST refused, every
// vcuda pod denied, two dialects reading the same resource).
#include <map>
#include <vector>

#include "config/config.h"
#include "scheduler/config_keys.h"
#include "scheduler/listen_address.h"

namespace tessera::scheduler {
namespace {

using config::Config;

constexpr uint64_t kMiB = 1024 * 1024;

// The resource-name keys of each dialect, after its enabled key.
const std::vector<std::pair<std::string, std::vector<std::string>>>& DialectResourceKeys() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> keys = {
      {"scheduler.dialects.vgpu.enabled",
       {"scheduler.dialects.vgpu.count-resource", "scheduler.dialects.vgpu.memory-resource",
        "scheduler.dialects.vgpu.memory-percentage-resource",
        "scheduler.dialects.vgpu.cores-resource"}},
      {"scheduler.dialects.vcuda.enabled",
       {"scheduler.dialects.vcuda.core-resource", "scheduler.dialects.vcuda.memory-resource"}},
      {"scheduler.dialects.gpushare.enabled", {"scheduler.dialects.gpushare.memory-resource"}},
  };
  return keys;
}

// Kubernetes extended resources are domain-qualified: "example.com/name".
bool QualifiedResourceName(const std::string& name) {
  size_t slash = name.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < name.size() &&
         name.find('/', slash + 1) == std::string::npos &&
         name.find_first_of(" \t\n") == std::string::npos;
}

Status ResourceNamesDistinctAndQualified(const Config& c) {
  std::map<std::string, std::string> owner;  // resource name -> the key that named it first
  for (const auto& [enabled, keys] : DialectResourceKeys()) {
    if (!c.GetBool(enabled)) continue;
    for (const std::string& key : keys) {
      const std::string& name = c.GetString(key);
      if (!QualifiedResourceName(name)) {
        return InvalidArgument("invalid value for " + c.Describe(key) +
                               ": expected an extended resource name such as example.com/gpu");
      }
      auto [it, fresh] = owner.emplace(name, key);
      if (!fresh) {
        return InvalidArgument(c.Describe(key) + " and " + c.Describe(it->second) +
                               " name the same resource; each resource may belong to one "
                               "dialect only: rename one of them or turn its dialect off");
      }
    }
  }
  return Status::Ok();
}

Status MemoryUnitsWholeMiB(const Config& c) {
  for (const char* key :
       {"scheduler.dialects.vcuda.memory-unit", "scheduler.dialects.gpushare.memory-unit"}) {
    if (c.GetBytes(key) % kMiB != 0) {
      return InvalidArgument("invalid value for " + c.Describe(key) +
                             ": expected a whole number of MiB, such as 256Mi or 1Gi");
    }
  }
  return Status::Ok();
}

Status ListenAddress(const Config& c) {
  Result<std::pair<std::string, int>> listen = ParseListen(c.GetString("scheduler.listen"));
  if (!listen.ok()) {
    return InvalidArgument("invalid value for " + c.Describe("scheduler.listen") + ": expected " +
                           "host:port such as 0.0.0.0:8443 or [::]:8443 (port 0..65535)");
  }
  return Status::Ok();
}

Status TlsFilesTogether(const Config& c) {
  if (c.GetString("scheduler.tls.cert").empty() != c.GetString("scheduler.tls.key").empty()) {
    return InvalidArgument(c.Describe("scheduler.tls.cert") + " and " +
                           c.Describe("scheduler.tls.key") +
                           ": set both (HTTPS) or neither (plain HTTP)");
  }
  return Status::Ok();
}

Status ClientCaNeedsTls(const Config& c) {
  if (!c.GetString("scheduler.tls.client-ca").empty() &&
      c.GetString("scheduler.tls.cert").empty()) {
    return InvalidArgument(c.Describe("scheduler.tls.client-ca") +
                           ": client certificates need HTTPS; set scheduler.tls.cert and "
                           "scheduler.tls.key too");
  }
  return Status::Ok();
}

// retry-period < renew-deadline < lease-duration, as the elector needs; the lease namespace/name.
Status LeaderElectionTimes(const Config& c) {
  if (!c.GetBool("scheduler.leader-election.enabled")) return Status::Ok();
  const std::string lease = c.GetString("scheduler.leader-election.lease");
  size_t slash = lease.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == lease.size() ||
      lease.find('/', slash + 1) != std::string::npos) {
    return InvalidArgument("scheduler.leader-election.lease must be namespace/name, not \"" +
                           lease + "\"");
  }
  const double duration = c.GetDuration("scheduler.leader-election.lease-duration").count();
  const double renew = c.GetDuration("scheduler.leader-election.renew-deadline").count();
  const double retry = c.GetDuration("scheduler.leader-election.retry-period").count();
  if (!(retry < renew && renew < duration)) {
    return InvalidArgument(
        "scheduler.leader-election: retry-period must be less than renew-deadline, and "
        "renew-deadline less than lease-duration (a leader must stop before another may start)");
  }
  return Status::Ok();
}

}  // namespace

void AddSchedulerRules(config::Schema& s) {
  s.AddRule(LeaderElectionTimes);
  s.AddRule(ResourceNamesDistinctAndQualified);
  s.AddRule(MemoryUnitsWholeMiB);
  s.AddRule(ListenAddress);
  s.AddRule(TlsFilesTogether);
  s.AddRule(ClientCaNeedsTls);
}

}  // namespace tessera::scheduler
