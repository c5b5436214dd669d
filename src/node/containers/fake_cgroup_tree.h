// Fake cgroup trees for the node agent's tests: the folders kubelet and the runtimes would make
// for a container, in either cgroup version and either cgroup driver, written out by hand (not
// with cgroup_paths.h, so the tests check that code against the layouts). Test-only;
// thread-compatible.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tessera::node::testing {

enum class CgroupVersion { kV1, kV2 };
enum class CgroupDriver { kCgroupfs, kSystemd };
enum class TestQos { kGuaranteed, kBurstable, kBestEffort };

// Makes `root` look like a cgroup mount: v2 holds cgroup.controllers; v1 holds one folder per
// controller hierarchy.
inline void MakeCgroupRoot(const std::string& root, CgroupVersion version) {
  std::filesystem::create_directories(root);
  if (version == CgroupVersion::kV2) {
    std::ofstream(root + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
  } else {
    for (const char* c : {"cpu,cpuacct", "memory", "pids", "systemd"}) {
      std::filesystem::create_directories(root + "/" + c);
    }
  }
}

// The pod's folder below a hierarchy, as kubelet names it.
inline std::string PodCgroupPath(CgroupDriver driver, TestQos qos, const std::string& uid) {
  if (driver == CgroupDriver::kCgroupfs) {
    switch (qos) {
      case TestQos::kGuaranteed:
        return "kubepods/pod" + uid;
      case TestQos::kBurstable:
        return "kubepods/burstable/pod" + uid;
      case TestQos::kBestEffort:
        return "kubepods/besteffort/pod" + uid;
    }
  }
  std::string u = uid;
  std::replace(u.begin(), u.end(), '-', '_');
  switch (qos) {
    case TestQos::kGuaranteed:
      return "kubepods.slice/kubepods-pod" + u + ".slice";
    case TestQos::kBurstable:
      return "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice";
    case TestQos::kBestEffort:
      return "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice";
  }
  return "";
}

// The hierarchy under `root` where tests put pods: the root (v2) or the pids controller (v1).
inline std::string TestHierarchy(const std::string& root, CgroupVersion version) {
  return version == CgroupVersion::kV2 ? root : root + "/pids";
}

// Makes folder `folder` (the runtime's name for the container) in the pod's folder with `pids`
// in its cgroup.procs; returns its path.
inline std::string MakeContainerCgroup(const std::string& hierarchy, CgroupDriver driver,
                                       TestQos qos, const std::string& uid,
                                       const std::string& folder,
                                       const std::vector<pid_t>& pids = {}) {
  std::string dir = hierarchy + "/" + PodCgroupPath(driver, qos, uid) + "/" + folder;
  std::filesystem::create_directories(dir);
  std::ofstream procs(dir + "/cgroup.procs");
  for (pid_t p : pids) procs << p << "\n";
  return dir;
}

// The runtime's folder name for container `id` under each driver (containerd).
inline std::string ContainerdFolder(CgroupDriver driver, const std::string& id) {
  return driver == CgroupDriver::kCgroupfs ? id : "cri-containerd-" + id + ".scope";
}

}  // namespace tessera::node::testing
