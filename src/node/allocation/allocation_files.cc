#include "node/allocation/allocation_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

namespace tessera::node {

std::string NewAllocationId() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mu);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::string CdiDeviceName(const std::string& allocation_id) {
  return "tessera.io/container=" + allocation_id;
}

std::string CdiSpecFileName(const std::string& kind, const std::string& name) {
  std::string file = kind;
  std::replace(file.begin(), file.end(), '/', '-');
  return file + "-" + name + ".json";
}

std::string LimitsText(const Grant& grant, const std::vector<GpuInfo>& gpus) {
  std::string out =
      "version=2\nmode=" + grant.mode + "\ndevices=" + std::to_string(grant.devices.size()) + "\n";
  for (size_t i = 0; i < grant.devices.size(); ++i) {
    const GrantDevice& d = grant.devices[i];
    std::string n = std::to_string(i);
    const std::string memory = std::to_string(d.memory_mib * 1024 * 1024);
    out += "uuid." + n + "=" + d.uuid + "\n";
    out += "memory." + n + "=" + memory + "\n";
    // On a GPU whose memory is scaled, any of the limit may come from host memory once the
    // device is full (docs/node-agent.md, node.device-memory-scaling).
    const GpuInfo* gpu = FindGpu(gpus, d.uuid);
    if (gpu != nullptr && gpu->memory_scaling > 1) out += "spill." + n + "=" + memory + "\n";
    out += "cores." + n + "=" + std::to_string(d.cores) + "\n";
    bool ceiling = grant.mode == "elastic" && d.cores > 0 && d.cores < 100 && d.cores_limit > 0 &&
                   d.cores_limit < 100;
    if (ceiling) out += "ceiling." + n + "=" + std::to_string(d.cores_limit) + "\n";
  }
  out += std::string("region=") + kContainerRegionDir + "/region\n";
  // The end marker counts the bytes before it: the library refuses a truncated file.
  out += "end=" + std::to_string(out.size()) + "\n";
  return out;
}

Result<std::vector<DeviceNode>> DeviceNodesOf(const std::vector<std::string>& uuids,
                                              const std::vector<GpuInfo>& gpus,
                                              const std::string& driver_root) {
  std::string root = driver_root;
  while (!root.empty() && root.back() == '/') root.pop_back();
  auto node = [&root](const std::string& path) { return DeviceNode{path, root + path}; };
  std::vector<DeviceNode> nodes;
  std::set<std::string> added;  // two MIG devices of one GPU share its node
  auto add = [&](const std::string& path) {
    if (added.insert(path).second) nodes.push_back(node(path));
  };
  for (const std::string& uuid : uuids) {
    if (const GpuInfo* g = FindGpu(gpus, uuid)) {
      add(g->device_path);
      continue;
    }
    const MigDeviceRef mig = FindMigDevice(gpus, uuid);
    if (mig.gpu == nullptr) return NotFound("GPU " + uuid + " is not on this node");
    // A MIG device is its GPU's node plus the capabilities of its GPU and compute instance,
    // which the driver checks when a process opens it.
    if (mig.instance->caps_paths.empty()) {
      return FailedPrecondition(
          "MIG device " + uuid + " of GPU " + std::to_string(mig.gpu->index) +
          " has no capability device nodes: the driver's MIG minors table (node.mig.minors-file) "
          "does not list GPU instance " +
          std::to_string(mig.instance->gpu_instance) + " and compute instance " +
          std::to_string(mig.instance->compute_instance));
    }
    add(mig.gpu->device_path);
    for (const std::string& cap : mig.instance->caps_paths) add(cap);
  }
  if (!uuids.empty()) {
    for (const char* control : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
      nodes.push_back(node(control));
    }
  }
  return nodes;
}

Result<std::string> CdiSpecText(const std::string& name, const Grant& grant,
                                const std::vector<GpuInfo>& gpus, const std::string& driver_root) {
  using nlohmann::json;
  std::vector<std::string> uuids;
  for (const GrantDevice& d : grant.devices) uuids.push_back(d.uuid);
  ASSIGN_OR_RETURN(std::vector<DeviceNode> found, DeviceNodesOf(uuids, gpus, driver_root));
  bool rooted = !driver_root.empty() && driver_root.find_first_not_of('/') != std::string::npos;
  json nodes = json::array();
  for (const DeviceNode& n : found) {
    json entry = {{"path", n.container_path}};
    if (rooted) entry["hostPath"] = n.host_path;
    nodes.push_back(entry);
  }
  std::string visible;
  for (const std::string& u : uuids) visible += (visible.empty() ? "" : ",") + u;
  // No allocation ID in the environment: a container holding two of Tessera's resources (vcuda
  // core and memory) gets both CDI devices, which must not contradict each other.
  json env = json::array({"TESSERA_VISIBLE_GPUS=" + visible});
  // A MIG device is a CUDA device only when named (a GPU in MIG mode is none itself).
  const bool any_mig = std::any_of(uuids.begin(), uuids.end(), [&](const std::string& u) {
    return FindMigDevice(gpus, u).gpu != nullptr;
  });
  if (any_mig) env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  json edits = {{"env", env}, {"deviceNodes", nodes}};
  json spec = {{"cdiVersion", "0.6.0"},
               {"kind", kCdiContainerKind},
               {"devices", json::array({{{"name", name}, {"containerEdits", edits}}})}};
  return spec.dump(2) + "\n";
}

namespace {

Status WriteThroughTemporary(const std::string& path, const std::string& content, bool durable) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + "/." + name + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create", tmp, errno);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoStatus("write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (durable && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoStatus("sync", tmp, err);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus("close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus("rename into place", path, err);
  }
  if (durable) {
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return ErrnoStatus("open", dir, errno);
    int synced = ::fsync(dir_fd);
    int err = errno;
    ::close(dir_fd);
    if (synced != 0) return ErrnoStatus("sync", dir, err);
  }
  return Status::Ok();
}

}  // namespace

// No fsync: the rename makes the change atomic for readers, and PreStartContainer rewrites the
// files before every container start, also after a crash or reboot.
Status WriteFileAtomic(const std::string& path, const std::string& content) {
  return WriteThroughTemporary(path, content, /*durable=*/false);
}

Status WriteFileDurably(const std::string& path, const std::string& content) {
  return WriteThroughTemporary(path, content, /*durable=*/true);
}

Status UpdateFileAtomic(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::string current(content.size() + 1, '\0');
    size_t got = 0;
    ssize_t n;
    while (got < current.size() &&
           (n = ::read(fd, current.data() + got, current.size() - got)) > 0) {
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    if (got == content.size() && current.compare(0, got, content) == 0) return Status::Ok();
  }
  return WriteFileAtomic(path, content);
}

std::string AllocationsRoot(const std::string& state_dir) {
  return state_dir + "/allocations";
}

std::string AllocationDirOf(const std::string& state_dir, const std::string& id) {
  return AllocationsRoot(state_dir) + "/" + id;
}

std::string RegionDirOf(const std::string& state_dir, const std::string& id) {
  return state_dir + "/regions/" + id;
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus("create folder", path, errno);
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    std::string part = path.substr(0, i);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("create folder", part, errno);
    }
  }
  return Status::Ok();
}

}  // namespace tessera::node
