// The node's `tessera.io/gpus` annotation: the inventory the scheduler reads.
//   {"version":1,"serving":true,"gpus":[{"uuid":"GPU-...","index":0,"model":"NVIDIA H200",
//     "memoryMiB":143771,"sms":132,"numa":0,"healthy":true,"pciBusId":"...","coresScaling":1,
//     "slots":10}]}
// `slots` is the split count: the vGPU slots (nvidia.com/gpu device IDs) each GPU advertises;
// `serving` whether every device plugin is registered with kubelet (DeviceBoard::SetServing).
// Pure function; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "node/gpu/gpu.h"

namespace tessera::node {

std::string GpusAnnotation(const std::vector<GpuInfo>& gpus, double cores_scaling, int slots,
                           bool serving);

}  // namespace tessera::node
