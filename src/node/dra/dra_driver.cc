#include "node/dra/dra_driver.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/allocation_folders.h"
#include "node/dra/claim_cdi_spec.h"

namespace tessera::node::dra {

namespace {

// An exclusive flock(2) on a file, held while the object lives: the agents of one node take
// turns (each holds it for one call).
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0) {
      status_ = ErrnoStatus("open", path, errno);
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      status_ = ErrnoStatus("lock", path, errno);
      return;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  const Status& status() const { return status_; }

 private:
  int fd_;
  Status status_ = Status::Ok();
};

}  // namespace

DraDriver::DraDriver(DraOptions options, ClaimSource& claims, const DeviceBoard& board)
    : options_(std::move(options)),
      claims_(claims),
      board_(board),
      prepared_(options_.state_dir + "/dra-claims.json") {}

Status DraDriver::Init() {
  RETURN_IF_ERROR(MakeDirs(options_.state_dir + "/allocations"));
  RETURN_IF_ERROR(MakeDirs(options_.state_dir + "/regions"));
  RETURN_IF_ERROR(MakeDirs(options_.cdi_dir));
  RETURN_IF_ERROR(UpdateFileAtomic(options_.state_dir + "/ld.so.preload",
                                   std::string(kContainerLibraryPath) + "\n"));
  std::lock_guard lock(mu_);
  FileLock shared(LockPath());
  RETURN_IF_ERROR(shared.status());
  RETURN_IF_ERROR(prepared_.Load());
  RebuildIfDamaged();
  return Status::Ok();
}

std::string DraDriver::LockPath() const {
  return options_.state_dir + "/dra-claims.lock";
}

Status DraDriver::Refresh() const {
  RETURN_IF_ERROR(prepared_.Refresh());
  RebuildIfDamaged();
  return Status::Ok();
}

void DraDriver::RebuildIfDamaged() const {
  if (!prepared_.damage().empty()) {
    log::Error(
        "the prepared claims' file was damaged: set aside, rebuilding it from the claims' "
        "folders and the API server",
        {{"file", options_.state_dir + "/dra-claims.json"},
         {"damage", prepared_.damage()},
         {"set_aside", options_.state_dir + "/dra-claims.json.damaged"}});
    Rebuild();
  }
}

void DraDriver::Rebuild() const {
  std::vector<GpuInfo> gpus = board_.Get().gpus;
  // A claim's folder is named by its UID (AllocationDir).
  for (const AllocationFolder& folder : ReadAllocationFolders(options_.state_dir)) {
    if (folder.claim.empty()) continue;
    ClaimRef ref{folder.ns, folder.claim, folder.id};
    recovering_[ref.uid] = ref;
    Result<nlohmann::json> object = claims_.Get(ref.ns, ref.name);
    Result<ClaimGrant> grant = object.ok() ? GrantOfClaim(*object, ref, options_.node_name, gpus)
                                           : Result<ClaimGrant>(object.status());
    if (!grant.ok()) {
      log::Warn("a prepared claim is held but not recorded: it is recorded at its next prepare",
                {{"claim", ref.ToString()}, {"error", grant.status().message()}});
      continue;
    }
    if (Status put = prepared_.Put({ref, std::move(*grant)}); !put.ok()) {
      log::Warn("a rebuilt claim could not be recorded",
                {{"claim", ref.ToString()}, {"error", put.message()}});
      continue;
    }
    recovering_.erase(ref.uid);
    log::Info("rebuilt a prepared claim", {{"claim", ref.ToString()}});
  }
}

std::string DraDriver::AllocationDir(const std::string& uid) const {
  return AllocationDirOf(options_.state_dir, uid);
}

std::string DraDriver::RegionDir(const std::string& uid) const {
  return RegionDirOf(options_.state_dir, uid);
}

std::string DraDriver::CdiSpecPath(const std::string& uid) const {
  return options_.cdi_dir + "/" + CdiSpecFileName(kCdiClaimKind, uid);
}

bool DraDriver::Holds(const std::string& claim_uid) const {
  std::lock_guard lock(mu_);
  FileLock shared(LockPath());
  if (Status s = shared.status().ok() ? Refresh() : shared.status(); !s.ok()) {
    // The housekeeper must not take a claim's files for abandoned when it cannot tell.
    log::Warn("cannot read the prepared claims again: taking the claim for held",
              {{"claim_uid", claim_uid}, {"error", s.message()}});
    return true;
  }
  return prepared_.Find(claim_uid) != nullptr || recovering_.count(claim_uid) > 0;
}

std::vector<std::string> DraDriver::ReleaseAbandoned(std::chrono::seconds bound) {
  std::vector<ClaimRef> held;
  {
    std::lock_guard lock(mu_);
    FileLock shared(LockPath());
    if (Status s = shared.status().ok() ? Refresh() : shared.status(); !s.ok()) {
      log::Warn("cannot read the prepared claims again: no claim released this round",
                {{"error", s.message()}});
      return {};
    }
    for (const auto& [uid, claim] : prepared_.all()) held.push_back(claim.ref);
    for (const auto& [uid, ref] : recovering_) held.push_back(ref);
  }
  std::vector<ClaimRef> abandoned;
  const auto now = std::chrono::steady_clock::now();
  for (const ClaimRef& ref : held) {
    {
      // Each claim at most every quarter of the bound: a node's API load stays small.
      std::lock_guard lock(mu_);
      auto asked = asked_.find(ref.uid);
      if (asked != asked_.end() && now - asked->second < bound / 4) continue;
      asked_[ref.uid] = now;
    }
    // Asked outside the lock: the API server may be slow, and kubelet's calls must not wait.
    Result<nlohmann::json> object = claims_.Get(ref.ns, ref.name);
    std::string why;
    if (!object.ok() && object.status().code() == StatusCode::kNotFound) {
      why = "the claim was deleted";
    } else if (object.ok() && object->value("/metadata/uid"_json_pointer, "") != ref.uid) {
      why = "the claim was deleted and created again";
    } else if (object.ok() && !object->contains("/status/allocation"_json_pointer)) {
      why = "the claim is no longer allocated";
    }
    std::lock_guard lock(mu_);
    if (why.empty()) {  // in use, or the API server cannot say now
      gone_since_.erase(ref.uid);
      continue;
    }
    auto since = gone_since_.try_emplace(ref.uid, now).first->second;
    if (now - since < bound) continue;
    gone_since_.erase(ref.uid);
    asked_.erase(ref.uid);
    abandoned.push_back(ref);
    log::Warn("unpreparing a ResourceClaim whose NodeUnprepareResources never came",
              {{"claim", ref.ToString()}, {"why", why}});
  }
  std::vector<std::string> released;
  for (const ClaimRef& ref : abandoned) {
    if (Status s = Unprepare(ref); !s.ok()) {
      log::Warn("could not unprepare an abandoned ResourceClaim",
                {{"claim", ref.ToString()}, {"error", s.message()}});
      continue;
    }
    released.push_back(ref.uid);
  }
  return released;
}

Result<std::vector<PreparedDevice>> DraDriver::Prepare(const ClaimRef& claim) {
  std::lock_guard lock(mu_);
  FileLock shared(LockPath());
  RETURN_IF_ERROR(shared.status());
  RETURN_IF_ERROR(Refresh());
  std::vector<GpuInfo> gpus = board_.Get().gpus;
  if (const PreparedClaim* known = prepared_.Find(claim.uid)) {
    RETURN_IF_ERROR(WriteFiles(*known, gpus));
    return known->grant.devices;
  }
  Result<nlohmann::json> object = claims_.Get(claim.ns, claim.name);
  if (!object.ok()) {
    return Status(object.status().code(), "cannot read ResourceClaim " + claim.ns + "/" +
                                              claim.name + ": " + object.status().message());
  }
  ASSIGN_OR_RETURN(ClaimGrant grant, GrantOfClaim(*object, claim, options_.node_name, gpus));
  PreparedClaim prepared{claim, std::move(grant)};
  RETURN_IF_ERROR(WriteFiles(prepared, gpus));
  RETURN_IF_ERROR(prepared_.Put(prepared));
  recovering_.erase(claim.uid);
  std::string uuids;
  for (const GrantDevice& d : prepared.grant.grant.devices)
    uuids += (uuids.empty() ? "" : ",") + d.uuid;
  log::Info("prepared a ResourceClaim",
            {{"claim", claim.ToString()},
             {"gpus", uuids},
             {"access", prepared.grant.admin_access ? "admin (no limits)" : "limited"}});
  return prepared.grant.devices;
}

Status DraDriver::Unprepare(const ClaimRef& claim) {
  std::lock_guard lock(mu_);
  FileLock shared(LockPath());
  RETURN_IF_ERROR(shared.status());
  RETURN_IF_ERROR(Refresh());
  std::error_code ec;
  std::filesystem::remove_all(AllocationDir(claim.uid), ec);
  if (ec) return ErrnoStatus("remove", AllocationDir(claim.uid), ec.value());
  std::filesystem::remove_all(RegionDir(claim.uid), ec);
  if (ec) return ErrnoStatus("remove", RegionDir(claim.uid), ec.value());
  std::filesystem::remove(CdiSpecPath(claim.uid), ec);
  if (ec) return ErrnoStatus("remove", CdiSpecPath(claim.uid), ec.value());
  bool known = prepared_.Find(claim.uid) != nullptr || recovering_.count(claim.uid) > 0;
  RETURN_IF_ERROR(prepared_.Remove(claim.uid));
  recovering_.erase(claim.uid);
  if (known) log::Info("unprepared a ResourceClaim", {{"claim", claim.ToString()}});
  return Status::Ok();
}

Status DraDriver::WriteFiles(const PreparedClaim& claim, const std::vector<GpuInfo>& gpus) {
  const std::string& uid = claim.ref.uid;
  const std::string dir = AllocationDir(uid);
  RETURN_IF_ERROR(MakeDir(dir));
  // No "pod" or "uid" key: the metrics and the memory guard follow containers of the
  // device-plugin path; the pids refresher finds the claim's containers by its namespace and
  // name; the housekeeper keeps the folder while the claim is prepared.
  nlohmann::json owner = {{"kind", "ResourceClaim"},
                          {"namespace", claim.ref.ns},
                          {"claim", claim.ref.name},
                          {"claimUid", uid}};
  RETURN_IF_ERROR(UpdateFileAtomic(dir + "/owner.json", owner.dump() + "\n"));
  // Administrative access (monitoring, management): the GPUs' device nodes alone, no library and
  // so no limits; NVML shows the whole GPUs and every process on them.
  std::vector<MountSpec> mounts;
  if (!claim.grant.admin_access) {
    RETURN_IF_ERROR(MakeDir(RegionDir(uid)));
    RETURN_IF_ERROR(UpdateFileAtomic(dir + "/limits", LimitsText(claim.grant.grant, gpus)));
    mounts = {
        {kContainerAllocationDir, dir, true},
        {kContainerLibraryPath, options_.library_path, true},
        {"/etc/ld.so.preload", options_.state_dir + "/ld.so.preload", true},
        {kContainerRegionDir, RegionDir(uid), false},
    };
  }
  ASSIGN_OR_RETURN(std::string spec,
                   ClaimCdiSpecText(uid, claim.grant, gpus, options_.driver_root, mounts));
  return UpdateFileAtomic(CdiSpecPath(uid), spec);
}

}  // namespace tessera::node::dra
