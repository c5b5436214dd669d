// PreparedClaims: the claims this node has prepared for kubelet (their grants and the devices
// answered), kept in one JSON file under the state folder so that an agent restart, and kubelet's
// NodePrepareResources calls after its own restart, find them again. Every change rewrites the file
// durably (allocation_files.h: WriteFileDurably) with a checksum of its claims. A file that cannot
// be read as one (empty, torn, not JSON, another version, a checksum that does not match) is
// damaged: Load moves it aside and starts empty, and says so (damage()), so that the driver
// rebuilds what it can instead of refusing to start.
//
// Two agents may share the file (a rolling update runs the old and the new at once): Refresh reads
// it again when another process has replaced it, under a lock the caller holds (dra_driver.h).
//
// Not thread-safe: DraDriver serialises its calls.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "node/dra/claim_grant.h"

namespace tessera::node::dra {

struct PreparedClaim {
  ClaimRef ref;
  ClaimGrant grant;
  bool operator==(const PreparedClaim&) const = default;
};

class PreparedClaims {
 public:
  explicit PreparedClaims(std::string path) : path_(std::move(path)) {}

  // Reads the file; a missing file is an empty state, one that cannot be opened an error naming
  // it. A damaged one is renamed to "<path>.damaged" (replacing an older one) and the state is
  // empty; damage() then says what was wrong.
  Status Load();
  // Load, when the file is not the one this object last read or wrote (every write replaces it
  // by a rename, so another writer's file is another inode); else nothing.
  Status Refresh();
  // Why the file Load found was damaged; empty when it was not.
  const std::string& damage() const { return damage_; }
  // The claim with `uid`, or nullptr.
  const PreparedClaim* Find(const std::string& uid) const;
  // Adds or replaces the claim and writes the file; on a write error nothing is changed.
  Status Put(const PreparedClaim& claim);
  // Forgets the claim (none is fine) and writes the file.
  Status Remove(const std::string& uid);
  const std::map<std::string, PreparedClaim>& all() const { return claims_; }

 private:
  Status Save(const std::map<std::string, PreparedClaim>& claims);
  // The identity of the file at path_ now (zeros when there is none).
  struct FileId {
    uint64_t dev = 0, ino = 0;
    int64_t size = -1, mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  FileId CurrentId() const;

  const std::string path_;
  std::map<std::string, PreparedClaim> claims_;  // by claim UID
  std::string damage_;
  FileId seen_;  // the file last read or written
};

}  // namespace tessera::node::dra
