// Which request dialects the cluster accepts and under which resource names (filled from the
// `scheduler.dialects.*` keys, config_keys.h): what the scheduler's parser (dialect.h), its
// webhook and kubectl tessera inspect agree on. Plain values: thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace tessera::scheduler {

struct DialectConfig {
  bool vgpu_enabled = true;
  std::string vgpu_count = "nvidia.com/gpu";
  std::string vgpu_memory = "nvidia.com/gpumem";
  std::string vgpu_memory_percent = "nvidia.com/gpumem-percentage";
  std::string vgpu_cores = "nvidia.com/gpucores";

  bool vcuda_enabled = true;
  std::string vcuda_core = "tencent.com/vcuda-core";
  std::string vcuda_memory = "tencent.com/vcuda-memory";
  std::string vcuda_core_limit_annotation = "tencent.com/vcuda-core-limit";
  uint64_t vcuda_memory_unit_mib = 256;

  bool gpushare_enabled = true;
  std::string gpushare_memory = "aliyun.com/gpu-mem";
  uint64_t gpushare_unit_mib = 1024;  // GiB; 1 when the cluster runs gpushare in MiB mode

  // From the `scheduler.dialects.*` keys (config_keys.h).
  static DialectConfig FromConfig(const config::Config& cfg);

  // Every resource name of the enabled dialects (for the webhook and the extender stanza).
  std::vector<std::string> ResourceNames() const;
};

}  // namespace tessera::scheduler
