#include "node/dra/prepared_claims.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "annotations/allocation.h"
#include "node/allocation/allocation_files.h"

namespace tessera::node::dra {

using nlohmann::json;

namespace {

constexpr int kVersion = 1;

// FNV-1a, 64 bits, in hex: detects a torn or garbled file (not a forged one: the state folder is
// the agent's own).
std::string Checksum(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

json ToJson(const PreparedClaim& c) {
  json gpus = json::array();
  for (const GrantDevice& d : c.grant.grant.devices) {
    json gpu = {{"uuid", d.uuid}, {"memoryMiB", d.memory_mib}, {"cores", d.cores}};
    if (d.cores_limit > 0) gpu["coresLimit"] = d.cores_limit;
    gpus.push_back(std::move(gpu));
  }
  json devices = json::array();
  for (const PreparedDevice& d : c.grant.devices) {
    json entry = {{"requests", d.requests}, {"pool", d.pool}, {"device", d.device}};
    if (d.share_id) entry["shareID"] = *d.share_id;
    devices.push_back(entry);
  }
  json out = {{"namespace", c.ref.ns},      {"name", c.ref.name}, {"uid", c.ref.uid},
              {"mode", c.grant.grant.mode}, {"gpus", gpus},       {"devices", devices}};
  if (c.grant.admin_access) out["adminAccess"] = true;
  return out;
}

// Files written before "mode" and "coresLimit" were kept read as hard, without a ceiling; before
// "adminAccess", as claims with limits.
PreparedClaim FromJson(const json& j) {
  PreparedClaim c;
  c.ref = {j.at("namespace").get<std::string>(), j.at("name").get<std::string>(),
           j.at("uid").get<std::string>()};
  c.grant.admin_access = j.value("adminAccess", false);
  c.grant.grant.mode = j.value("mode", std::string("hard"));
  if (!annotations::ParseComputeMode(c.grant.grant.mode)) {
    throw std::invalid_argument("claim " + c.ref.uid + ": mode \"" + c.grant.grant.mode + "\"");
  }
  for (const json& g : j.at("gpus")) {
    c.grant.grant.devices.push_back({g.at("uuid").get<std::string>(),
                                     g.at("memoryMiB").get<uint64_t>(), g.at("cores").get<int>(),
                                     g.value("coresLimit", 0)});
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

// The claims of `text`, or why it is not a prepared-claims file.
Result<std::map<std::string, PreparedClaim>> Parse(const std::string& text) {
  json state = json::parse(text, nullptr, false);
  if (state.is_discarded()) {
    return FailedPrecondition(text.empty() ? "it is empty" : "it is not JSON (torn?)");
  }
  if (!state.is_object() || state.value("version", 0) != kVersion) {
    return FailedPrecondition("it is not a prepared-claims file of version " +
                              std::to_string(kVersion));
  }
  if (!state.contains("claims") || !state["claims"].is_array()) {
    return FailedPrecondition("it has no list of claims");
  }
  // Written before the checksum was: none to check.
  if (state.contains("checksum") && state["checksum"] != Checksum(state["claims"].dump())) {
    return FailedPrecondition("its checksum does not match its claims");
  }
  std::map<std::string, PreparedClaim> claims;
  try {
    for (const json& j : state["claims"]) {
      PreparedClaim c = FromJson(j);
      claims[c.ref.uid] = std::move(c);
    }
  } catch (const std::exception& e) {
    return FailedPrecondition(std::string("it is malformed: ") + e.what());
  }
  return claims;
}

}  // namespace

PreparedClaims::FileId PreparedClaims::CurrentId() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

Status PreparedClaims::Refresh() {
  damage_.clear();
  return CurrentId() == seen_ ? Status::Ok() : Load();
}

Status PreparedClaims::Load() {
  damage_.clear();
  seen_ = CurrentId();
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) {
      claims_.clear();
      return Status::Ok();
    }
    return ErrnoStatus("open", path_, errno);
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return ErrnoStatus("read", path_, errno);
  Result<std::map<std::string, PreparedClaim>> claims = Parse(text);
  if (claims.ok()) {
    claims_ = std::move(*claims);
    return Status::Ok();
  }
  damage_ = claims.status().message();
  std::string aside = path_ + ".damaged";
  if (::rename(path_.c_str(), aside.c_str()) != 0) return ErrnoStatus("rename", path_, errno);
  claims_.clear();
  seen_ = CurrentId();
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

Status PreparedClaims::Save(const std::map<std::string, PreparedClaim>& claims) {
  json list = json::array();
  for (const auto& [uid, c] : claims) list.push_back(ToJson(c));
  RETURN_IF_ERROR(WriteFileDurably(
      path_,
      json{{"version", kVersion}, {"claims", list}, {"checksum", Checksum(list.dump())}}.dump(2) +
          "\n"));
  seen_ = CurrentId();
  return Status::Ok();
}

}  // namespace tessera::node::dra
