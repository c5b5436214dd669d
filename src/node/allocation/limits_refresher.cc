#include "node/allocation/limits_refresher.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/allocation_folders.h"
#include "node/allocation/grant.h"
#include "node/allocation/pod_view.h"
#include "node/metrics/region_figures.h"

namespace tessera::node {
namespace {

using json = nlohmann::json;

// A limits file's (or the guard-floor file's) key=value lines.
std::map<std::string, std::string> KeyValues(const std::string& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> kv;
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// The GPUs a limits file names (uuid.<i>, in device order).
std::vector<std::string> UuidsOfLimits(std::map<std::string, std::string>& kv) {
  std::vector<std::string> uuids;
  const int devices = std::atoi(kv["devices"].c_str());
  for (int i = 0; i < devices; ++i) uuids.push_back(kv["uuid." + std::to_string(i)]);
  return uuids;
}

uint64_t Number(std::map<std::string, std::string>& kv, const std::string& key) {
  return std::strtoull(kv[key].c_str(), nullptr, 10);
}

constexpr uint64_t kMiB = 1024 * 1024;

}  // namespace

LimitsRefresher::LimitsRefresher(Allocator& allocator, const PodSource& pods, ApiWriter& writer,
                                 LimitsRefresherOptions options)
    : allocator_(allocator), pods_(pods), writer_(writer), options_(std::move(options)) {}

void LimitsRefresher::Report(const std::string& id, const std::string& why) {
  std::string& last = reported_[id];
  if (last == why) return;
  last = why;
  log::Warn("limits file kept as it is", {{"allocation", id}, {"reason", why}});
}

std::vector<std::string> LimitsRefresher::RunOnce(const std::vector<GpuInfo>& gpus) {
  namespace fs = std::filesystem;
  std::vector<std::string> rewritten;
  std::set<std::string> problems;  // the folders reported this pass
  std::error_code ec;
  for (const fs::directory_entry& e :
       fs::directory_iterator(AllocationsRoot(options_.state_dir), ec)) {
    const std::string id = e.path().filename().string();
    std::ifstream owner_in(e.path() / "owner.json");
    const json owner = json::parse(owner_in, nullptr, false);
    // Containers only: a DRA claim's size is its claim's (docs/resize.md), and a folder without
    // a pod is not set up yet.
    if (!owner.is_object() || owner.value("pod", "").empty()) continue;
    const std::string ns = owner.value("namespace", ""), name = owner.value("pod", "");
    const std::string container = owner.value("container", "");
    PodRef pod = pods_.FindPod(ns, name);
    if (!pod || PodUid(*pod) != owner.value("uid", "") || PodFinished(*pod)) continue;
    const std::string decision = PodAnnotation(*pod, kAllocationAnnotation);
    if (decision.empty()) continue;  // whole GPUs behind its device IDs: nothing to resize
    const std::string what = "pod " + ns + "/" + name;
    if (Status s = options_.signing.Check(*pod, kAllocationAnnotation, what); !s.ok()) {
      problems.insert(id);
      Report(id, s.message());
      continue;
    }
    Result<std::optional<Grant>> grant =
        GrantFromAllocation(decision, container, options_.node_name);
    if (!grant.ok() || !*grant) {
      problems.insert(id);
      Report(id, grant.ok() ? "the decision lists no container " + container
                            : grant.status().message());
      continue;
    }
    // The same bounds as at PreStartContainer: a decision larger than the GPU is never written.
    if (Status fits = CheckGrant(**grant, gpus); !fits.ok()) {
      problems.insert(id);
      Report(id, fits.message());
      continue;
    }
    const std::string limits_path = e.path().string() + "/limits";
    std::map<std::string, std::string> before = KeyValues(limits_path);
    std::vector<std::string> held = UuidsOfLimits(before);
    std::vector<std::string> decided;
    for (const GrantDevice& d : (*grant)->devices) decided.push_back(d.uuid);
    if (held != decided) {
      // Before PreStartContainer the file names no GPU; afterwards only a resize changes it,
      // and a resize keeps the GPUs.
      if (!held.empty()) {
        problems.insert(id);
        Report(id, "the decision names other GPUs than the container has");
      }
      continue;
    }
    // A new limit below what the container holds is a ceiling for its new allocations: the
    // host-side memory check goes on allowing its limit before (the guard-floor file, written
    // before the limits). The library applies the new file up to a second later, so the container
    // may grow under its old limit meanwhile: every shrink writes the floor, and it goes only once
    // the library has applied the new limit (the region says so) and the usage is under it.
    const RegionFigures region = ReadRegionFigures(RegionDirOf(options_.state_dir, id) + "/region");
    const std::string floor_path = e.path().string() + "/" + kGuardFloorFile;
    std::map<std::string, std::string> floors = KeyValues(floor_path);
    std::string floor_text;
    std::vector<size_t> above;  // devices whose new limit is below what is held
    for (size_t i = 0; i < (*grant)->devices.size(); ++i) {
      const std::string n = std::to_string(i);
      const uint64_t limit = (*grant)->devices[i].memory_mib * kMiB;
      const uint64_t used = i < region.used.size() ? region.used[i] : 0;
      const uint64_t old_limit = Number(before, "memory." + n);
      const uint64_t old_floor = Number(floors, "floor." + n);
      if (limit == 0) continue;
      const bool shrinks = old_limit > limit;
      // No region: no process of the container has run, none holds anything.
      const bool applied = i >= region.limits.size() || region.limits[i] == limit;
      if (!shrinks && (old_floor <= limit || (used <= limit && applied))) continue;
      const uint64_t floor = std::max(old_floor, old_limit);
      if (floor <= limit) continue;
      floor_text += "floor." + n + "=" + std::to_string(floor) + "\n";
      if (shrinks && used > limit) above.push_back(i);
    }
    Status floor_written = Status::Ok();
    if (!floor_text.empty()) {
      floor_written = UpdateFileAtomic(floor_path, floor_text);
    } else if (!floors.empty()) {
      std::error_code gone;
      fs::remove(floor_path, gone);
    }
    if (!floor_written.ok()) {
      problems.insert(id);
      Report(id, floor_written.message());
      continue;
    }
    Result<bool> changed = allocator_.RewriteLimits(id, LimitsText(**grant, gpus));
    if (!changed.ok()) {
      problems.insert(id);
      Report(id, changed.status().message());
      continue;
    }
    if (!*changed) continue;
    rewritten.push_back(id);
    log::Info("limits file rewritten for the pod's new decision",
              {{"pod", what + " container " + container}, {"allocation", id}});
    for (size_t i : above) {
      const GrantDevice& d = (*grant)->devices[i];
      (void)writer_.CreatePodEvent(
          ns, name, "Warning", kAboveNewLimitReason,
          "container " + container + " holds " + std::to_string(region.used[i] / kMiB) +
              " MiB on GPU " + d.uuid + ", above its new limit of " + std::to_string(d.memory_mib) +
              " MiB: its new allocations are refused until its usage falls under the limit; "
              "nothing it holds is taken away");
    }
  }
  std::erase_if(reported_, [&](const auto& r) { return !problems.count(r.first); });
  return rewritten;
}

}  // namespace tessera::node
