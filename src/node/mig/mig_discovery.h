// MIG discovery through NVML: a GPU's MIG mode (current and pending) and its MIG devices with
// profile, placement, memory, SMs, UUID, health and the capability device nodes a container
// needs (/dev/nvidia-caps/nvidia-cap<N>, numbered by the driver's mig-minors table).
//
// Pure functions over NVML (thread-safe, as NVML is) and a file read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "abi/nvml.h"
#include "common/status.h"
#include "node/gpu/mig_info.h"
#include "node/gpu/nvml_library.h"

namespace tessera::node {

// The driver's table of MIG capability minors (/proc/driver/nvidia-caps/mig-minors): lines
// "gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13", "config 1". Maps each name to its minor.
using MigMinors = std::map<std::string, int>;

// Parses the table; a line that is not "<name> <number>" is an error naming the line.
Result<MigMinors> ParseMigMinors(const std::string& text);
// Reads and parses `path`; NotFound when the file does not exist (no MIG in the driver).
Result<MigMinors> ReadMigMinors(const std::string& path);

// "/dev/nvidia-caps/nvidia-cap<N>" for the access of GPU instance `gi` and of its compute
// instance `ci` on the GPU of minor number `gpu_minor`; empty when the table lacks either.
std::vector<std::string> MigCapsPaths(const MigMinors& minors, int gpu_minor, int gi, int ci);

// The MIG state of `device`, whose device node has minor number `gpu_minor`. A GPU whose driver
// does not answer nvmlDeviceGetMigMode is not capable (no error); an NVML failure while listing
// the MIG devices of a GPU in MIG mode is an error. A MIG device whose queries fail is listed
// unhealthy with what is known of it. `mode` stays kNone (the configuration sets it).
Result<MigStatus> DiscoverMig(const NvmlLibrary& nvml, nvmlDevice_t device, int gpu_minor,
                              const MigMinors& minors);

}  // namespace tessera::node
