#include "node/dra/prepared_claims.h"

#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

#include "node/allocation/allocation_files.h"

namespace tessera::node::dra {

using nlohmann::json;

namespace {

constexpr int kVersion = 1;

json ToJson(const PreparedClaim& c) {
  json gpus = json::array();
  for (const GrantDevice& d : c.grant.grant.devices) {
    gpus.push_back({{"uuid", d.uuid}, {"memoryMiB", d.memory_mib}, {"cores", d.cores}});
  }
  json devices = json::array();
  for (const PreparedDevice& d : c.grant.devices) {
    json entry = {{"requests", d.requests}, {"pool", d.pool}, {"device", d.device}};
    if (d.share_id) entry["shareID"] = *d.share_id;
    devices.push_back(entry);
  }
  return {{"namespace", c.ref.ns},
          {"name", c.ref.name},
          {"uid", c.ref.uid},
          {"gpus", gpus},
          {"devices", devices}};
}

PreparedClaim FromJson(const json& j) {
  PreparedClaim c;
  c.ref = {j.at("namespace").get<std::string>(), j.at("name").get<std::string>(),
           j.at("uid").get<std::string>()};
  for (const json& g : j.at("gpus")) {
    c.grant.grant.devices.push_back({g.at("uuid").get<std::string>(),
                                     g.at("memoryMiB").get<uint64_t>(), g.at("cores").get<int>(),
                                     0});
  }
  for (const json& d : j.at("devices")) {
    PreparedDevice device{d.at("requests").get<std::vector<std::string>>(),
                          d.at("pool").get<std::string>(), d.at("device").get<std::string>(),
                          std::nullopt};
    if (d.contains("shareID")) device.share_id = d["shareID"].get<std::string>();
    c.grant.devices.push_back(std::move(device));
  }
  return c;
}

}  // namespace

Status PreparedClaims::Load() {
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoStatus("open", path_, errno);
  }
  json state = json::parse(in, nullptr, false);
  if (!state.is_object() || state.value("version", 0) != kVersion) {
    return FailedPrecondition(path_ + " is not a prepared-claims file of version " +
                              std::to_string(kVersion));
  }
  std::map<std::string, PreparedClaim> claims;
  try {
    for (const json& j : state.at("claims")) {
      PreparedClaim c = FromJson(j);
      claims[c.ref.uid] = std::move(c);
    }
  } catch (const json::exception& e) {
    return FailedPrecondition(path_ + " is malformed: " + e.what());
  }
  claims_ = std::move(claims);
  return Status::Ok();
}

const PreparedClaim* PreparedClaims::Find(const std::string& uid) const {
  auto it = claims_.find(uid);
  return it == claims_.end() ? nullptr : &it->second;
}

Status PreparedClaims::Put(const PreparedClaim& claim) {
  std::map<std::string, PreparedClaim> next = claims_;
  next[claim.ref.uid] = claim;
  RETURN_IF_ERROR(Save(next));
  claims_ = std::move(next);
  return Status::Ok();
}

Status PreparedClaims::Remove(const std::string& uid) {
  if (claims_.count(uid) == 0) return Status::Ok();
  std::map<std::string, PreparedClaim> next = claims_;
  next.erase(uid);
  RETURN_IF_ERROR(Save(next));
  claims_ = std::move(next);
  return Status::Ok();
}

Status PreparedClaims::Save(const std::map<std::string, PreparedClaim>& claims) const {
  json list = json::array();
  for (const auto& [uid, c] : claims) list.push_back(ToJson(c));
  return WriteFileAtomic(path_, json{{"version", kVersion}, {"claims", list}}.dump(2) + "\n");
}

}  // namespace tessera::node::dra
