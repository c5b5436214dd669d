// The node's `tessera.io/gpus` annotation (annotations/inventory.h has its fields): the GPUs the
// agent found, each with the node's vGPU slots (node.device-split-count), cores scaling and its
// memory scaling (GpuInfo::memory_scaling), and whether every device plugin is registered with
// kubelet (DeviceBoard::SetServing).
// Pure function; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "node/gpu/gpu.h"

namespace tessera::node {

std::string GpusAnnotation(const std::vector<GpuInfo>& gpus, double cores_scaling, int slots,
                           bool serving);

}  // namespace tessera::node
