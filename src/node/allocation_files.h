// The files the node agent writes for one allocation: the limits file read by libtessera-cuda.so
// (format in src/abi/limits_format.h) and the CDI spec that gives the container its device nodes.
//
// An allocation is named by its allocation ID, a stable hash of the resource name and the sorted
// device IDs (kubelet passes them in random order), so Allocate and PreStartContainer, which never
// carry the pod's identity, name the same files. Every file is written under a temporary name in
// its final folder and renamed into place, so a reader sees the old or the new file, never a mix.
// Pure functions plus file writes; thread-compatible (distinct allocations may be written from
// different threads; one allocation is written by one thread at a time).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "node/gpu.h"
#include "node/grant.h"

namespace tessera::node {

// 16 lower-case hex digits (FNV-1a 64 of "<resource>\n<sorted ids joined by ','>").
std::string AllocationId(const std::string& resource, std::vector<std::string> device_ids);

// "tessera.io/container=<id>".
std::string CdiDeviceName(const std::string& allocation_id);

// Container paths.
inline constexpr const char* kContainerAllocationDir = "/var/run/tessera";
inline constexpr const char* kContainerRegionDir = "/var/run/tessera-region";
inline constexpr const char* kContainerLibraryPath = "/usr/local/lib/tessera/libtessera-cuda.so";

// The limits file for `grant` (whole file text). An empty grant (no GPU) gives "devices=0".
std::string LimitsText(const Grant& grant);

// The CDI spec (JSON) of device `tessera.io/container=<id>`: the device nodes of the grant's
// GPUs plus the driver's control nodes, and TESSERA_ALLOCATION_ID in the environment. The nodes
// are /dev/nvidia* in the container and <driver_root>/dev/nvidia* on the host.
Result<std::string> CdiSpecText(const std::string& allocation_id, const Grant& grant,
                                const std::vector<GpuInfo>& gpus,
                                const std::string& driver_root = "/");

// Writes `content` to `path` through "<dir>/.<name>.tmp" and rename(2). Creates no folders.
Status WriteFileAtomic(const std::string& path, const std::string& content);

// WriteFileAtomic unless `path` already holds exactly `content` (PreStartContainer after a right
// guess rewrites nothing).
Status UpdateFileAtomic(const std::string& path, const std::string& content);

// Creates `path` and its parents (mode 0755); OK when it exists.
Status MakeDirs(const std::string& path);
// Creates the folder `path` (its parent must exist); OK when it exists.
Status MakeDir(const std::string& path);

}  // namespace tessera::node
