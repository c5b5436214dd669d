// ResourceSlicePublisher: keeps the node's ResourceSlice for the DRA driver gpu.tessera.io
// (slice_content.h says what it holds) on the API server as the node's GPUs are.
//
// On its own thread it creates the slice when it is missing, updates it (pool.generation one
// higher) when it differs from the GPUs last given to Update, and deletes the driver's slices of
// this node under another name. It does so after each Update, at once when a watch sees the slice
// deleted, and every `resync`; API errors are logged and retried with backoff. A GPU that turns
// unhealthy leaves the slice until it is healthy again. Stop leaves the slice on the API server.
// Thread-safe: Update may be called from any thread; Start and Stop from one.
//
//   ResourceSlicePublisher slices(client, {.node_name = node, .node_uid = uid});
//   RETURN_IF_ERROR(slices.Start());
//   slices.Update(board.Get().gpus);  // again whenever the DeviceBoard's version changes
//   slices.Stop();
//
// Why (kubelet's deletions, rolling updates): docs/dra.md, "What each node publishes".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/backoff.h"
#include "kube/cancel_token.h"
#include "kube/client.h"
#include "node/dra/slice_content.h"
#include "node/gpu/gpu.h"

namespace tessera::node {

struct ResourceSlicePublisherOptions {
  std::string node_name;
  std::string node_uid;  // the Node's metadata.uid: the slice's ownerReference
  // The effect of an unhealthy GPU's taint (slice_content.h): None, NoSchedule or NoExecute.
  std::string unhealthy_taint = "NoSchedule";
  // Checks the API server's slices this often even when the GPUs did not change.
  std::chrono::milliseconds resync{30'000};
  // Waits between failed attempts.
  kube::Backoff::Options backoff{.initial = std::chrono::milliseconds(500),
                                 .max = std::chrono::milliseconds(30'000)};
};

class ResourceSlicePublisher {
 public:
  // `client` must outlive the publisher.
  ResourceSlicePublisher(kube::Client& client, ResourceSlicePublisherOptions options);
  ~ResourceSlicePublisher();  // Stop()

  // Starts the publishing thread, which publishes once Update has given it the GPUs. Does not wait
  // for the API server. kInvalidArgument when the node name or uid is empty; kFailedPrecondition
  // when it was started before (a publisher starts once, also after Stop).
  Status Start();
  // Ends the thread (an API call in flight is cancelled); the slice stays (see above).
  void Stop();
  // The node's GPUs with their health, as they are now; the slice follows them.
  void Update(const std::vector<GpuInfo>& gpus);

 private:
  void Run();
  // Watches the node's slices of this driver until Stop, and wakes Run when ours is deleted.
  void Watch();
  // "spec.nodeName=<node>,spec.driver=gpu.tessera.io".
  std::string FieldSelector() const;
  // One reconciliation against the API server; OK when the slice says `devices`.
  Status Reconcile(const nlohmann::json& devices);

  const ResourceSlicePublisherOptions options_;
  const SliceOwner owner_;
  const std::string name_;  // ResourceSliceName(node)
  kube::Client& client_;
  kube::CancelToken cancel_;
  std::thread thread_;
  std::thread watcher_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::optional<nlohmann::json> devices_;  // guarded by mu_; the devices to publish
  bool dirty_ = false;                     // guarded by mu_; devices_ changed since last taken
  bool stop_ = false;                      // guarded by mu_
};

}  // namespace tessera::node
