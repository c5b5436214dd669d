// The labels every Tessera metric about a GPU carries, in the node agent and the scheduler alike,
// named as NVIDIA's DCGM exporter names them so that series join with its own (`on(UUID)`, or
// `on(Hostname, gpu)`): node and Hostname (the node's name), gpu (NVML's index, as nvidia-smi
// shows it), UUID and modelName. And the build-info series each component exports.
//
//   out += "tessera_gpu_healthy{" + GpuLabels(node, 0, "GPU-8f3c...", "NVIDIA H200") + "} 1\n";
//
// docs/metrics.md lists every family with its labels.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

// node="..",Hostname="..",gpu="<index>",UUID="..",modelName="..", each value escaped. A GPU the
// caller cannot place (index < 0) has gpu="" (no such label, to Prometheus).
std::string GpuLabels(std::string_view node, int index, std::string_view uuid,
                      std::string_view model);

// The project's version, "0.1.0" (CMake's PROJECT_VERSION).
std::string_view TesseraVersion();

// Appends tessera_build_info{component="<component>",version="..."} 1 with its HELP and TYPE.
void RenderBuildInfo(std::string& out, std::string_view component);

}  // namespace tessera
