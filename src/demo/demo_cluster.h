// DemoCluster: the small cluster `tessera demo` runs on this machine, every part a process of the
// demo's ProcessGroup, each writing its log under <workdir>/logs:
//
//   tessera-fake-apiserver (with the scheduler's admission webhook on pod creation)
//   tessera scheduler      (extender + webhook, plain HTTP on 127.0.0.1)
//   per node: tessera-fake-kubelet + tessera node, over the node's own simgpu state directory
//
// Start* return once the part answers (or an error naming the part and its log). The fake
// kubelets run every container as ContainerCommand(): tessera-demo-workload under
// libtessera-cuda.so when the container has a GPU, its output saved as
// <workdir>/out/<allocation-id>.txt, then waits (so the pod stays Running) until its fake
// kubelet is gone, so that even a demo killed with SIGKILL leaves no container behind.
//
// Thread-safety: one thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "demo/process_group.h"

namespace tessera::demo {

// Where the build put everything the demo starts.
struct DemoPaths {
  std::string bin_dir;         // tessera, tessera-fake-apiserver, tessera-fake-kubelet, workload
  std::string hook_library;    // libtessera-cuda.so
  std::string simgpu_lib_dir;  // libcuda.so.1 and libnvidia-ml.so.1 of simgpu
  std::string examples_dir;    // the pod YAML files
};

// Finds the paths next to the running `tessera` binary (<build>/bin/tessera); an error lists
// what is missing and says to build it.
Result<DemoPaths> FindDemoPaths();

// A node of the demo: `gpu_count` identical simulated GPUs.
struct DemoNode {
  std::string name;
  std::string model;
  int memory_mib;
  int sms;
  int gpu_count;

  // The node's SIMGPU_DEVICES (docs/simgpu.md).
  std::string SimgpuDevices() const;
};

class DemoCluster {
 public:
  DemoCluster(DemoPaths paths, std::string workdir, ProcessGroup& group);

  Status StartApiServer();  // also reserves the scheduler's port for the webhook URL
  Status StartScheduler();
  Status StartNode(const DemoNode& node);
  // Waits until the node shows `gpu_count` GPUs in its tessera.io/gpus annotation.
  Status WaitForNode(const DemoNode& node);

  const std::string& api_url() const { return api_url_; }
  std::string scheduler_url() const;
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& workdir() const { return workdir_; }
  std::string out_dir() const { return workdir_ + "/out"; }
  std::string logs_dir() const { return workdir_ + "/logs"; }
  const DemoPaths& paths() const { return paths_; }

 private:
  std::string ContainerCommand() const;

  const DemoPaths paths_;
  const std::string workdir_;
  ProcessGroup& group_;
  std::string api_url_;
  std::string kubeconfig_;
  int scheduler_port_ = 0;
};

}  // namespace tessera::demo
