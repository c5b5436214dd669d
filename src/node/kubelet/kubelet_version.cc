#include "node/kubelet/kubelet_version.h"

#include <cstdio>

namespace tessera::node {

std::optional<std::string> CdiVersionWarning(const std::string& kubelet_version, bool cdi) {
  if (!cdi) return std::nullopt;
  int major = 0, minor = 0;
  if (std::sscanf(kubelet_version.c_str(), "v%d.%d", &major, &minor) != 2) return std::nullopt;
  if (major > 1 || (major == 1 && minor >= 29)) return std::nullopt;
  return "kubelet " + kubelet_version +
         " passes device plugins' CDI devices to containers only with its "
         "DevicePluginCDIDevices feature gate on (on by default from 1.29): without it GPU "
         "containers get no device nodes. Turn the gate on, or set node.cdi=false (the device "
         "nodes then come in the Allocate answer)";
}

}  // namespace tessera::node
