// AgentPart: a part of the node agent that the Agent starts after GPU discovery (the DeviceBoard
// holds the GPUs by then) and stops in its Stop (node.mode=dra: the DRA kubelet plugin, the
// ResourceSlice publisher).
//
// Start/Stop from one thread.
#pragma once

#include "common/status.h"

namespace tessera::node {

class AgentPart {
 public:
  virtual ~AgentPart() = default;
  virtual Status Start() = 0;
  // Stops what Start started; nothing when it did not start.
  virtual void Stop() = 0;
};

}  // namespace tessera::node
