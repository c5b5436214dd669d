#include "node/allocation/allocation_folders.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "abi/host_pids.h"
#include "abi/limits_format.h"
#include "node/allocation/allocation_files.h"

namespace tessera::node {
namespace {

// The host PIDs of the pids file at `path` (src/abi/host_pids.h).
std::optional<std::vector<uint32_t>> HostPids(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != "version=" + std::to_string(TESSERA_PIDS_VERSION)) {
    return std::nullopt;
  }
  std::vector<uint32_t> pids;
  for (unsigned long host = 0; in >> host && std::getline(in, line);) {
    pids.push_back(static_cast<uint32_t>(host));
  }
  return pids;
}

}  // namespace

std::vector<AllocationFolder> ReadAllocationFolders(const std::string& state_dir) {
  namespace fs = std::filesystem;
  std::vector<AllocationFolder> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(AllocationsRoot(state_dir), ec)) {
    std::ifstream owner_in(e.path() / "owner.json");
    nlohmann::json owner = nlohmann::json::parse(owner_in, nullptr, false);
    if (!owner.is_object()) continue;
    AllocationFolder f{.id = e.path().filename().string(),
                       .path = e.path().string(),
                       .ns = owner.value("namespace", ""),
                       .pod = owner.value("pod", ""),
                       .container = owner.value("container", ""),
                       .claim = owner.value("claim", "")};
    if (f.pod.empty() == f.claim.empty()) continue;  // neither, or not one of the two kinds
    std::ifstream limits_in(e.path() / "limits");
    std::map<std::string, std::string> kv;
    for (std::string line; std::getline(limits_in, line);) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    std::ifstream floor_in(e.path() / kGuardFloorFile);
    for (std::string line; std::getline(floor_in, line);) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) kv["guard-" + line.substr(0, eq)] = line.substr(eq + 1);
    }
    int devices = std::atoi(kv["devices"].c_str());
    for (int i = 0; i < devices && i < TESSERA_MAX_DEVICES; ++i) {
      std::string n = std::to_string(i);
      f.devices.push_back(
          {.uuid = kv["uuid." + n],
           .memory_bytes = std::strtoull(kv["memory." + n].c_str(), nullptr, 10),
           .cores = std::atoi(kv["cores." + n].c_str()),
           .guard_floor_bytes = std::strtoull(kv["guard-floor." + n].c_str(), nullptr, 10)});
    }
    f.host_pids = HostPids(e.path() / TESSERA_PIDS_FILE_NAME);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tessera::node
