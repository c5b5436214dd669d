// BoardSlicePublisher: the ResourceSlice publisher fed from the agent's DeviceBoard, so that the
// node's slice follows discovery and the health monitor with nothing else to call: Start gives
// the publisher the board's GPUs and then, from its own thread, the GPUs again on every change of
// the board. This is the part the node agent starts in DRA mode, after GPU discovery (the board
// holds the GPUs by then) and after the kubelet plugin.
//
// Start/Stop from one thread.
//
//   BoardSlicePublisher slices(client, {.node_name = node, .node_uid = uid}, agent.board());
//   RETURN_IF_ERROR(slices.Start());
//   ...
//   slices.Stop();  // the slice stays (resource_slices.h says why)
#pragma once

#include <atomic>
#include <thread>

#include "common/status.h"
#include "kube/client.h"
#include "node/agent_part.h"
#include "node/dra/resource_slices.h"
#include "node/gpu/device_board.h"

namespace tessera::node {

class BoardSlicePublisher : public AgentPart {
 public:
  // `client` and `board` must outlive it.
  BoardSlicePublisher(kube::Client& client, ResourceSlicePublisherOptions options,
                      const DeviceBoard& board);
  ~BoardSlicePublisher() override;  // Stop()

  // Starts the publisher (its errors: ResourceSlicePublisher::Start) and the thread that follows
  // the board.
  Status Start() override;
  // Stops following the board, then the publisher.
  void Stop() override;

 private:
  void Follow(uint64_t seen);

  const DeviceBoard& board_;
  ResourceSlicePublisher publisher_;
  std::atomic<bool> stop_{false};
  std::thread follower_;
};

}  // namespace tessera::node
