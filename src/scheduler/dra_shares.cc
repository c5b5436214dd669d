#include "scheduler/dra_shares.h"

#include <charconv>

#include "common/quantity.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

std::string MetaString(const json& object, const char* key) {
  const json v = object.value(json::json_pointer(std::string("/metadata/") + key), json());
  return v.is_string() ? v.get<std::string>() : std::string();
}

// object[key] when it is a string, else "" (a field of another type never throws).
std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The pods of status.reservedFor, as namespace/name (the claim's namespace).
std::vector<std::string> ReservedPods(const json& claim, const std::string& ns) {
  std::vector<std::string> out;
  const json reserved = claim.value(json::json_pointer("/status/reservedFor"), json::array());
  if (!reserved.is_array()) return out;
  for (const json& r : reserved) {
    if (r.is_object() && Str(r, "resource") == "pods" && Str(r, "apiGroup").empty()) {
      out.push_back(ns + "/" + Str(r, "name"));
    }
  }
  return out;
}

std::optional<int> GpuIndexOf(const std::string& device) {
  constexpr std::string_view prefix = "gpu-";
  if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  int index = 0;
  const char* end = device.data() + device.size();
  auto [ptr, ec] = std::from_chars(device.data() + prefix.size(), end, index);
  if (ec != std::errc() || ptr != end || index < 0) return std::nullopt;
  return index;
}

}  // namespace

std::vector<DraShare> DraSharesOf(const json& claim, std::vector<std::string>& warnings) {
  std::vector<DraShare> out;
  if (!claim.is_object()) return out;
  std::string ns = MetaString(claim, "namespace");
  if (ns.empty()) ns = "default";
  const std::string key = ns + "/" + MetaString(claim, "name");
  const json results =
      claim.value(json::json_pointer("/status/allocation/devices/results"), json::array());
  if (!results.is_array()) return out;
  const std::vector<std::string> pods = ReservedPods(claim, ns);
  for (const json& r : results) {
    if (!r.is_object() || Str(r, "driver") != kDraDriver) continue;
    const json consumed = r.value("consumedCapacity", json::object());
    DraShare share{.claim = key,
                   .uid = MetaString(claim, "uid"),
                   .node = Str(r, "pool"),
                   .device = Str(r, "device")};
    share.gpu_index = GpuIndexOf(share.device);
    share.pods = pods;
    std::string bad;
    if (consumed.is_object() && consumed.contains("memory")) {
      Result<int64_t> bytes = ParseWholeQuantity(consumed["memory"]);
      if (bytes.ok()) {
        share.memory_mib = static_cast<uint64_t>(*bytes) >> 20;
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
    if (!bad.empty()) {
      warnings.push_back("claim " + key + ": device " + share.device + ": consumedCapacity " + bad);
      continue;
    }
    out.push_back(std::move(share));
  }
  return out;
}

void DraShareTable::OnClaim(EventType type, const json& claim) {
  std::string ns = MetaString(claim, "namespace");
  const std::string key = (ns.empty() ? "default" : ns) + "/" + MetaString(claim, "name");
  Claim parsed;
  if (type != EventType::kDeleted) parsed.shares = DraSharesOf(claim, parsed.warnings);
  std::lock_guard<std::mutex> lock(mu_);
  if (parsed.shares.empty() && parsed.warnings.empty()) {
    claims_.erase(key);  // not (or no longer) allocated on Tessera's GPUs: nothing to keep
  } else {
    claims_[key] = std::move(parsed);
  }
}

DraShareTable::Contents DraShareTable::Snapshot() const {
  Contents out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, c] : claims_) {
    out.shares.insert(out.shares.end(), c.shares.begin(), c.shares.end());
    out.warnings.insert(out.warnings.end(), c.warnings.begin(), c.warnings.end());
  }
  return out;
}

}  // namespace tessera::scheduler
