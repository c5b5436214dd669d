// Renders a ClusterView as `kubectl tessera inspect` prints it: a table of GPUs per node
// (allocated/total memory and cores, pods), optionally the pods on each GPU and a bar chart per
// GPU, the cluster totals and the pending pods; or per node in GiB (gpushare's view); or as JSON
// or YAML.
// Pure functions: thread-safe.
//
//   NODE    GPU  MODEL        MEMORY (MiB)          CORES (%)     PODS
//   gpu-a   0    SimGPU-3090  8192/24268 (33%)      30/100 (30%)  2
#pragma once

#include <string>

#include "inspect/cluster_view.h"

namespace tessera::inspect {

// kGib: one line per node with each GPU's allocated/total memory in GiB, as gpushare's
// `kubectl inspect gpushare` shows it. kYaml: the JSON document as YAML.
enum class OutputFormat { kPlain, kWide, kJson, kYaml, kGib };

struct RenderOptions {
  OutputFormat format = OutputFormat::kPlain;
  bool details = false;     // -d: the pods on each GPU
  bool bars = false;        // a bar chart line per GPU (when stdout is a terminal)
  bool no_headers = false;  // --no-headers: the tables without their column header line
};

// `view` must be Finish()ed.
std::string Render(const ClusterView& view, const RenderOptions& options);

}  // namespace tessera::inspect
