#include "node/kubelet/kubelet_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/strings.h"
#include "deviceplugin_v1beta1.pb.h"
#include "node/allocation/allocation_files.h"
#include "node/kubelet/json_slices.h"

namespace tessera::node {

namespace {

// The allocation an Allocate answer names: the folder mounted at /var/run/tessera, when it is
// one of `allocations_dir`'s.
std::string AllocationOfAnswer(const std::string& answer, const std::string& allocations_dir) {
  v1beta1::ContainerAllocateResponse resp;
  if (!resp.ParseFromString(answer)) return "";
  for (const v1beta1::Mount& m : resp.mounts()) {
    if (m.container_path() != kContainerAllocationDir) continue;
    const std::string& host = m.host_path();
    if (host.size() <= allocations_dir.size() + 1 ||
        host.compare(0, allocations_dir.size(), allocations_dir) != 0 ||
        host[allocations_dir.size()] != '/') {
      return "";
    }
    std::string id = host.substr(allocations_dir.size() + 1);
    return id.find('/') == std::string::npos ? id : "";
  }
  return "";
}

// The whole file at `path` into `out`, read in one go when it is still `size_hint` bytes (it is
// read to its end in any case); false with errno set when it cannot be read.
bool ReadWhole(const std::string& path, size_t size_hint, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->resize(size_hint + 1);
  size_t have = 0;
  while (true) {
    if (have == out->size()) out->resize(out->size() * 2);
    ssize_t n = ::read(fd, out->data() + have, out->size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  out->resize(have);
  return true;
}

// One entry, read from its text without building a document (a burst of admissions brings
// dozens of new entries at once).
Result<DeviceAssignment> ParseEntry(std::string_view text, const std::string& allocations_dir) {
  auto members = JsonMembers(text);
  if (!members) return InvalidArgument("an entry is not an object");
  DeviceAssignment a;
  std::optional<std::string> answer;
  bool uid = false, container = false, resource = false;
  for (const auto& [key, value] : *members) {
    if (key == "PodUID" || key == "ContainerName" || key == "ResourceName") {
      std::optional<std::string> v = JsonString(value);
      if (!v) return InvalidArgument("the " + std::string(key) + " of an entry is not a string");
      (key == "PodUID" ? a.pod_uid : key == "ContainerName" ? a.container : a.resource) = *v;
      (key == "PodUID" ? uid : key == "ContainerName" ? container : resource) = true;
    } else if (key == "DeviceIDs") {
      auto numas = JsonMembers(value);
      if (!numas) return InvalidArgument("the DeviceIDs of an entry are not a map");
      for (const auto& [numa, list] : *numas) {
        auto ids = JsonElements(list);
        if (!ids) return InvalidArgument("the DeviceIDs of an entry are not lists");
        for (std::string_view id : *ids) {
          std::optional<std::string> v = JsonString(id);
          if (!v) return InvalidArgument("a device ID is not a string");
          a.device_ids.push_back(std::move(*v));
        }
      }
    } else if (key == "AllocResp" && JsonTrim(value) != "null") {
      std::optional<std::string> encoded = JsonString(value);
      answer = encoded ? Base64Decode(*encoded) : std::nullopt;
      if (!answer) return InvalidArgument("the AllocResp of an entry is not base64");
    }
  }
  if (!uid || !container || !resource) {
    return InvalidArgument("an entry lacks PodUID, ContainerName or ResourceName");
  }
  // A device with several NUMA nodes is listed under each of them.
  std::sort(a.device_ids.begin(), a.device_ids.end());
  a.device_ids.erase(std::unique(a.device_ids.begin(), a.device_ids.end()), a.device_ids.end());
  if (answer) a.allocation_id = AllocationOfAnswer(*answer, allocations_dir);
  return a;
}

}  // namespace

Result<std::vector<DeviceAssignment>> ParseKubeletCheckpoint(const std::string& text,
                                                             const std::string& allocations_dir,
                                                             EntryMemo* memo) {
  // Only the entries are read: RegisteredDevices, every device of the node, is skipped unparsed.
  std::optional<std::string_view> data = JsonMember(text, "Data");
  if (!data || JsonTrim(*data).empty() || JsonTrim(*data).front() != '{') {
    return InvalidArgument("not a kubelet device manager checkpoint (no \"Data\" object)");
  }
  std::vector<DeviceAssignment> out;
  std::optional<std::string_view> entries = JsonMember(*data, "PodDeviceEntries");
  if (!entries || *entries == "null") return out;  // kubelet writes null for no entries
  std::optional<std::vector<std::string_view>> items = JsonElements(*entries);
  if (!items) return InvalidArgument("\"PodDeviceEntries\" is not a list");
  EntryMemo seen;
  for (std::string_view item : *items) {
    // Most entries are the same as at the last read: parse only the new ones.
    if (memo != nullptr) {
      if (auto it = memo->find(item); it != memo->end()) {
        out.push_back(it->second);
        seen.insert(memo->extract(it));
        continue;
      }
    }
    ASSIGN_OR_RETURN(DeviceAssignment a, ParseEntry(item, allocations_dir));
    if (memo != nullptr) seen.emplace(std::string(item), a);
    out.push_back(std::move(a));
  }
  if (memo != nullptr) *memo = std::move(seen);
  return out;
}

KubeletCheckpoint::KubeletCheckpoint(std::string path, std::string allocations_dir)
    : path_(std::move(path)), allocations_dir_(std::move(allocations_dir)) {}

Result<AssignmentList> KubeletCheckpoint::List() {
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::make_shared<const std::vector<DeviceAssignment>>();
    return Unavailable("kubelet's device checkpoint " + path_ + ": " + std::strerror(errno));
  }
  if (st.st_ino == ino_ && st.st_size == size_ && st.st_mtim.tv_sec == mtime_.tv_sec &&
      st.st_mtim.tv_nsec == mtime_.tv_nsec) {
    return cached_;
  }
  std::string text;
  if (!ReadWhole(path_, static_cast<size_t>(st.st_size), &text)) {
    return Unavailable("kubelet's device checkpoint " + path_ +
                       " cannot be read: " + std::strerror(errno));
  }
  Result<std::vector<DeviceAssignment>> parsed =
      ParseKubeletCheckpoint(text, allocations_dir_, &memo_);
  if (!parsed.ok()) {
    return parsed.status().WithContext("kubelet's device checkpoint " + path_);
  }
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  cached_ = std::make_shared<const std::vector<DeviceAssignment>>(std::move(*parsed));
  return cached_;
}

}  // namespace tessera::node
