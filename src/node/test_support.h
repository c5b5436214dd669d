// Helpers shared by the node agent's tests and benchmark: pods as API objects, a fake of kubelet's
// device checkpoint and per-test temporary folders. Test-only; thread-compatible except
// FakeDeviceAssignments, which is thread-safe.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/gpu/gpu.h"
#include "node/kubelet/kubelet_checkpoint.h"

namespace tessera::node::testing {

// The whole content of the file at `path` ("" when it cannot be read).
inline std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A pod bound to `node` with one container `container` asking `count` of `resource`, and the
// scheduler's decision for it when `decision` is not empty ({uuid, memoryMiB, cores} per device).
struct TestDevice {
  std::string uuid;
  uint64_t memory_mib;
  int cores;
};
inline nlohmann::json MakePod(const std::string& name, const std::string& node,
                              const std::string& resource, int64_t count,
                              const std::vector<TestDevice>& decision = {},
                              const std::string& container = "main") {
  nlohmann::json pod = {{"metadata",
                         {{"name", name},
                          {"namespace", "default"},
                          {"uid", "uid-" + name},
                          {"creationTimestamp", "2026-11-29T10:00:00Z"},
                          {"annotations", nlohmann::json::object()}}},
                        {"spec",
                         {{"nodeName", node},
                          {"containers",
                           {{{"name", container},
                             {"resources", {{"limits", {{resource, std::to_string(count)}}}}}}}}}},
                        {"status", {{"phase", "Pending"}}}};
  if (!decision.empty()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const TestDevice& d : decision) {
      devices.push_back({{"uuid", d.uuid}, {"memoryMiB", d.memory_mib}, {"cores", d.cores}});
    }
    nlohmann::json alloc = {
        {"version", 1},
        {"node", node},
        {"containers", {{{"name", container}, {"mode", "hard"}, {"devices", devices}}}}};
    pod["metadata"]["annotations"]["tessera.io/allocation"] = alloc.dump();
  }
  return pod;
}

inline std::vector<GpuInfo> TestGpus(int n, uint64_t memory_mib = 81920) {
  std::vector<GpuInfo> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({.uuid = "GPU-" + std::to_string(i),
                   .index = i,
                   .model = "NVIDIA H100",
                   .memory_mib = memory_mib,
                   .sms = 132,
                   .numa = i / 4,
                   .device_path = "/dev/nvidia" + std::to_string(i)});
  }
  return out;
}

// What kubelet's checkpoint would hold: Add an entry as kubelet records an Allocate answer.
class FakeDeviceAssignments : public DeviceAssignments {
 public:
  void Add(const std::string& pod_uid, const std::string& container, const std::string& resource,
           std::vector<std::string> device_ids, const std::string& allocation_id) {
    std::sort(device_ids.begin(), device_ids.end());
    std::lock_guard lock(mu_);
    list_.push_back({pod_uid, container, resource, std::move(device_ids), allocation_id});
  }
  void Fail(bool fail) { fail_ = fail; }
  Result<AssignmentList> List() override {
    if (fail_) return Unavailable("the checkpoint cannot be read (test)");
    std::lock_guard lock(mu_);
    return std::make_shared<const std::vector<DeviceAssignment>>(list_);
  }

 private:
  std::mutex mu_;
  std::vector<DeviceAssignment> list_;
  std::atomic<bool> fail_{false};
};

// A fresh folder under the test temp dir, removed by the destructor. Short, so that unix socket
// paths under it stay below 108 bytes.
class TempDir {
 public:
  // Under `base` ("" = /tmp).
  explicit TempDir(const std::string& base = "") {
    static std::atomic<int> n{0};
    path_ = (base.empty() ? "/tmp" : base) + "/tn" + std::to_string(::getpid()) + "_" +
            std::to_string(n++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessera::node::testing
