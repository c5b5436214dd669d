// The node's `tessera.io/gpus` annotation: the inventory the scheduler reads.
//   {"version":1,"gpus":[{"uuid":"GPU-...","index":0,"model":"NVIDIA H200","memoryMiB":143771,
//     "sms":132,"numa":0,"healthy":true,"pciBusId":"...","coresScaling":1,"slots":10}]}
// `slots` is the split count: the vGPU slots (nvidia.com/gpu device IDs) each GPU advertises.
// Pure function; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "node/gpu/gpu.h"

namespace tessera::node {

std::string GpusAnnotation(const std::vector<GpuInfo>& gpus, double cores_scaling, int slots);

}  // namespace tessera::node
