#include "inspect/dra_claims.h"

#include "common/quantity.h"

namespace tessera::inspect {
namespace {

using kube::Json;

// The pods of status.reservedFor, as namespace/name (the claim's namespace).
std::vector<std::string> ReservedPods(const Json& claim, const std::string& ns) {
  std::vector<std::string> out;
  const Json reserved = claim.value(Json::json_pointer("/status/reservedFor"), Json::array());
  if (!reserved.is_array()) return out;
  for (const Json& r : reserved) {
    if (r.is_object() && r.value("resource", "") == "pods" && r.value("apiGroup", "").empty()) {
      out.push_back(ns + "/" + r.value("name", ""));
    }
  }
  return out;
}

}  // namespace

void AddDraClaims(const std::vector<Json>& claims, ClusterView& view) {
  for (const Json& claim : claims) {
    const std::string ns = kube::NamespaceOf(claim);
    const std::string key = ns + "/" + kube::NameOf(claim);
    const Json results =
        claim.value(Json::json_pointer("/status/allocation/devices/results"), Json::array());
    if (!results.is_array()) continue;
    const std::vector<std::string> pods = ReservedPods(claim, ns);
    for (const Json& r : results) {
      if (!r.is_object() || r.value("driver", "") != kDraDriver) continue;
      const Json consumed = r.value("consumedCapacity", Json::object());
      PodShare share{.pod = key, .containers = pods};
      bool whole_memory = true;
      std::string bad;
      if (consumed.is_object() && consumed.contains("memory")) {
        Result<int64_t> bytes = ParseWholeQuantity(consumed["memory"]);
        if (bytes.ok()) {
          share.memory_mib = static_cast<uint64_t>(*bytes) >> 20;
          whole_memory = false;
        } else {
          bad = "memory: " + bytes.status().message();
        }
      }
      if (consumed.is_object() && consumed.contains("cores")) {
        Result<int64_t> cores = ParseWholeQuantity(consumed["cores"]);
        if (cores.ok() && *cores <= 100) {
          share.cores = static_cast<int>(*cores);
        } else {
          bad = "cores: " +
                (cores.ok() ? std::to_string(*cores) + " is over 100" : cores.status().message());
        }
      }
      const std::string device = r.value("device", "");
      if (!bad.empty()) {
        view.warnings.push_back("claim " + key + ": device " + device + ": consumedCapacity " +
                                bad);
        continue;
      }
      view.AddDraShare(r.value("pool", ""), device, std::move(share), whole_memory);
    }
  }
}

}  // namespace tessera::inspect
