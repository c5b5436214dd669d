// The files the node agent writes for one allocation: the limits file read by libtessera-cuda.so
// (format in src/abi/limits_format.h) and the CDI spec that gives the container its device nodes.
//
// An allocation is one Allocate answer (one container's devices of one resource), named by an
// allocation ID drawn at random when kubelet calls Allocate; kubelet's checkpoint later tells
// which container holds it (node/kubelet/kubelet_checkpoint.h). Every file is written under a
// temporary name in its final folder and renamed into place, so a reader sees the old or the new
// file, never a mix. Pure functions plus file writes; thread-compatible (distinct allocations may
// be written from different threads; one allocation is written by one thread at a time).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "node/allocation/grant.h"
#include "node/gpu/gpu.h"

namespace tessera::node {

// A new allocation ID: 16 lower-case hex digits, random. Thread-safe.
std::string NewAllocationId();

// "tessera.io/container=<id>".
std::string CdiDeviceName(const std::string& allocation_id);

// Container paths.
inline constexpr const char* kContainerAllocationDir = "/var/run/tessera";
inline constexpr const char* kContainerRegionDir = "/var/run/tessera-region";
inline constexpr const char* kContainerLibraryPath = "/usr/local/lib/tessera/libtessera-cuda.so";

// The limits file for `grant` (whole file text). An empty grant (no GPU) gives "devices=0". A
// device on a GPU of `gpus` whose memory_scaling is above 1 also gets spill.<i>, as much as its
// memory.<i>: all of its limit may be served from host memory when the GPU is full. A GPU not in
// `gpus` counts as unscaled, and so does every GPU when `gpus` is left out.
std::string LimitsText(const Grant& grant, const std::vector<GpuInfo>& gpus = {});

// A device node: /dev/nvidia* in the container, <driver_root>/dev/nvidia* on the host.
struct DeviceNode {
  std::string container_path, host_path;
};

// The device nodes of the GPUs `uuids` plus the driver's control nodes (none without a GPU). A
// MIG device's UUID ("MIG-...") gives its GPU's node and its GPU and compute instance's
// capability nodes (/dev/nvidia-caps/nvidia-cap<N>); FailedPrecondition when they are unknown.
Result<std::vector<DeviceNode>> DeviceNodesOf(const std::vector<std::string>& uuids,
                                              const std::vector<GpuInfo>& gpus,
                                              const std::string& driver_root = "/");

// A bind mount into the container.
struct MountSpec {
  std::string container_path, host_path;
  bool read_only = true;
};

inline constexpr const char* kCdiContainerKind = "tessera.io/container";
inline constexpr const char* kCdiClaimKind = "tessera.io/claim";  // DRA claims (node/dra/)

// "<kind, '/' as '-'>-<name>.json": the file of the CDI spec of device `<kind>=<name>`.
std::string CdiSpecFileName(const std::string& kind, const std::string& name);

// The CDI spec (JSON) of device `tessera.io/container=<name>`: DeviceNodesOf the grant's GPUs and
// TESSERA_VISIBLE_GPUS in the environment, and CUDA_VISIBLE_DEVICES with the same UUIDs when one
// of them is a MIG device. The device-plugin path gives its mounts in the Allocate
// answer; a DRA claim's spec, with its mounts, is node/dra/claim_cdi_spec.h's.
Result<std::string> CdiSpecText(const std::string& name, const Grant& grant,
                                const std::vector<GpuInfo>& gpus,
                                const std::string& driver_root = "/");

// Writes `content` to `path` through "<dir>/.<name>.tmp" and rename(2). Creates no folders.
Status WriteFileAtomic(const std::string& path, const std::string& content);

// WriteFileAtomic, and the content on disk before it returns: the temporary file is synced before
// the rename and the folder after it, so that a crash or a power loss leaves the old content or
// the new, never an empty or torn file. For state that nothing rewrites after a reboot.
Status WriteFileDurably(const std::string& path, const std::string& content);

// WriteFileAtomic unless `path` already holds exactly `content` (a container's restart rewrites
// nothing).
Status UpdateFileAtomic(const std::string& path, const std::string& content);

// Creates `path` and its parents (mode 0755); OK when it exists.
Status MakeDirs(const std::string& path);
// Creates the folder `path` (its parent must exist); OK when it exists.
Status MakeDir(const std::string& path);

// The node agent's folders under its state folder, one per allocation (a device-plugin
// allocation's ID or a DRA claim's UID): "<state_dir>/allocations" holds the limits, owner and pids
// files, "<state_dir>/regions" the shared region the container's processes map.
std::string AllocationsRoot(const std::string& state_dir);
std::string AllocationDirOf(const std::string& state_dir, const std::string& id);
std::string RegionDirOf(const std::string& state_dir, const std::string& id);

}  // namespace tessera::node
