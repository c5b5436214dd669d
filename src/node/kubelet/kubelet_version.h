// What the kubelet's version means for how the agent hands devices to containers. kubelet passes
// a device plugin's CDI devices to the runtime only with its DevicePluginCDIDevices feature gate:
// alpha (off by default) in 1.28, beta (on) in 1.29, GA in 1.31. With CDI on and an older kubelet,
// containers would get no device nodes.
//
// Pure functions; thread-compatible.
#pragma once

#include <optional>
#include <string>

namespace tessera::node {

// The warning to log when `cdi` is on and `kubelet_version` ("v1.28.3", status.nodeInfo of the
// Node) is older than 1.29, else nullopt (also for a version that cannot be read).
std::optional<std::string> CdiVersionWarning(const std::string& kubelet_version, bool cdi);

}  // namespace tessera::node
