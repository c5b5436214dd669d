// DraDriver: the node side of the DRA driver gpu.tessera.io without gRPC: prepares and unprepares
// ResourceClaims for kubelet (dra_service.h translates and delegates).
//
// Prepare reads the claim from the API server, checks its UID, takes its grant (claim_grant.h),
// writes the claim's files (one set per claim UID, shared by every container that uses the claim,
// in the allocator's layout, with a CDI spec of one device per GPU: claim_cdi_spec.h) and records
// the claim in <state-dir>/dra-claims.json (prepared_claims.h). A prepared claim answers the same
// again without asking the API server, and rewrites only files that are missing or differ.
// Unprepare removes the files and forgets the claim; an unknown claim is fine. Thread-safe: calls
// are serialised, also with another agent's on the node (a rolling update runs two, which kubelet
// calls in turn: one may unprepare what the other prepared): each call holds a lock on
// <state-dir>/dra-claims.lock and first reads dra-claims.json again if the other replaced it.
//
//   RETURN_IF_ERROR(driver.Init());  // reads dra-claims.json back
//   ASSIGN_OR_RETURN(std::vector<PreparedDevice> devices, driver.Prepare({ns, name, uid}));
//
// Files, paths and restarts: docs/dra.md, "Files" and "Restarts".
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "node/allocation/housekeeper.h"
#include "node/dra/claim_grant.h"
#include "node/dra/claim_source.h"
#include "node/dra/prepared_claims.h"
#include "node/gpu/device_board.h"

namespace tessera::node::dra {

struct DraOptions {
  std::string node_name;  // the pool of this node's devices
  std::string state_dir = "/var/lib/tessera";
  std::string cdi_dir = "/var/run/cdi";
  std::string library_path = "/usr/local/lib/tessera/libtessera-cuda.so";  // on the host
  std::string driver_root = "/";
};

class DraDriver : public ClaimOwner {
 public:
  // `claims` and `board` (the node's GPUs and their health) must outlive the driver.
  DraDriver(DraOptions options, ClaimSource& claims, const DeviceBoard& board);

  // Creates the state folders and ld.so.preload, and loads the prepared claims. When their file
  // is damaged (prepared_claims.h), it rebuilds them instead of refusing to start: every claim
  // that has a folder is held (the housekeeper keeps its files, and its Unprepare finds it), and
  // each is read again from the API server and recorded; one that cannot be read now is recorded
  // at its next Prepare, which reads it then.
  Status Init();
  // The devices of the prepared claim, or an error whose message says why it cannot be prepared.
  Result<std::vector<PreparedDevice>> Prepare(const ClaimRef& claim);
  Status Unprepare(const ClaimRef& claim);
  // Whether the claim with `uid` is prepared (the housekeeper keeps its files).
  bool Holds(const std::string& claim_uid) const override;
  // Asks the API server about every claim it holds (each at most every `bound` / 4): one deleted,
  // replaced (another UID) or no longer allocated for `bound` (as seen by these calls) is
  // unprepared, and logged.
  std::vector<std::string> ReleaseAbandoned(std::chrono::seconds bound) override;

  std::string AllocationDir(const std::string& uid) const;
  std::string RegionDir(const std::string& uid) const;
  std::string CdiSpecPath(const std::string& uid) const;

 private:
  Status WriteFiles(const PreparedClaim& claim, const std::vector<GpuInfo>& gpus);
  // mu_ and the lock file held: prepared_ as the file has it now (another agent may have written
  // it), rebuilt when it is damaged.
  Status Refresh() const;
  void RebuildIfDamaged() const;  // after a Load or Refresh
  std::string LockPath() const;
  // After a damaged file: the claims of the folders, recorded again where the API server says.
  void Rebuild() const;

  const DraOptions options_;
  ClaimSource& claims_;
  const DeviceBoard& board_;
  mutable std::mutex mu_;
  // Mutable: even Holds reads them from the file first. Guarded by mu_ and the lock file.
  mutable PreparedClaims prepared_;
  // Claims with a folder that a damaged file lost and the API server did not give back yet: held
  // until prepared or unprepared. Guarded by mu_.
  mutable std::map<std::string, ClaimRef> recovering_;
  // When ReleaseAbandoned first found a held claim gone, and last asked about it, by UID.
  // Guarded by mu_.
  std::map<std::string, std::chrono::steady_clock::time_point> gone_since_, asked_;
};

}  // namespace tessera::node::dra
