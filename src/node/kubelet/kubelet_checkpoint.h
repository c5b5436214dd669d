// Which container holds which devices, and which Allocate answer it got: read from kubelet's
// device manager checkpoint, `<kubelet-dir>/device-plugins/kubelet_internal_checkpoint` (one entry
// per pod UID, container and resource, with its device IDs and Allocate answer; the checksum is
// not checked). Every Allocate answer of this agent names its own allocation folder, so the answer
// tells which allocation belongs to which container.
//
// DeviceAssignments is the interface (fakes in tests). KubeletCheckpoint is thread-safe; it
// parses the file again only when it changed (inode, size or modification time).
//
//   KubeletCheckpoint checkpoint(kubelet_dir + "/device-plugins/kubelet_internal_checkpoint",
//                                state_dir + "/allocations");
//   ASSIGN_OR_RETURN(AssignmentList held, checkpoint.List());
//
// Why the checkpoint, and its format: docs/node-agent.md, "The pod mapping".
#pragma once

#include <sys/types.h>

#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace tessera::node {

struct DeviceAssignment {
  std::string pod_uid, container, resource;
  std::vector<std::string> device_ids;  // sorted
  // The allocation this agent's Allocate answer named for the container ("" when the answer is
  // not one of this agent's: another plugin's resource, or another state folder).
  std::string allocation_id;
};

// Shared and immutable: a list that did not change since the last read is handed out again
// without copying (every Allocate and PreStartContainer reads it).
using AssignmentList = std::shared_ptr<const std::vector<DeviceAssignment>>;

class DeviceAssignments {
 public:
  virtual ~DeviceAssignments() = default;
  // Every (pod, container, resource) kubelet has allocated devices to. An error when the source
  // cannot be read; an empty list when kubelet has allocated nothing yet.
  virtual Result<AssignmentList> List() = 0;
};

// Entries already parsed, by their text (looked up without copying it). The hash reads an
// entry's head (pod UID, container, resource, device IDs) and tail (the end of its answer) only:
// an entry is a kilobyte or more, the checkpoint holds one per container of the node, and every
// read looks each of them up; equal heads and tails only cost a comparison.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const {
    constexpr size_t kHead = 256, kTail = 64;
    if (text.size() <= kHead + kTail) return std::hash<std::string_view>{}(text);
    size_t h = std::hash<std::string_view>{}(text.substr(0, kHead));
    h ^= std::hash<std::string_view>{}(text.substr(text.size() - kTail)) + 0x9e3779b97f4a7c15 +
         (h << 6) + (h >> 2);
    return h ^ text.size();
  }
};
using EntryMemo = std::unordered_map<std::string, DeviceAssignment, TextHash, std::equal_to<>>;

// The entries of a checkpoint file's text. `allocations_dir` is this agent's
// `<state-dir>/allocations`: an answer's mount of /var/run/tessera from `<allocations_dir>/<id>`
// names allocation `<id>`. With `memo`, entries found there are not parsed again, and `memo` is
// left holding this text's entries.
Result<std::vector<DeviceAssignment>> ParseKubeletCheckpoint(const std::string& text,
                                                             const std::string& allocations_dir,
                                                             EntryMemo* memo = nullptr);

class KubeletCheckpoint : public DeviceAssignments {
 public:
  KubeletCheckpoint(std::string path, std::string allocations_dir);
  // A missing file is an empty list (kubelet writes it at its first allocation).
  Result<AssignmentList> List() override;
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  const std::string allocations_dir_;
  std::mutex mu_;
  // The last parse and the file it came from; guarded by mu_.
  ino_t ino_ = 0;
  off_t size_ = -1;
  timespec mtime_{};
  AssignmentList cached_;
  EntryMemo memo_;
};

}  // namespace tessera::node
