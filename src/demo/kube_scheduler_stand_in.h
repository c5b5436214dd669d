// KubeSchedulerStandIn: the part of kube-scheduler the demo needs, since no real kube-scheduler
// runs here. It polls the API server for pods with `schedulerName: tessera` that are not bound,
// and for each calls the Tessera extender as kube-scheduler's `tessera` profile would: filter
// with the node names, prioritize the nodes that fit, bind to the best score. A pod that fits
// nowhere gets the condition kube-scheduler sets: PodScheduled=False, reason Unschedulable,
// message "0/N nodes are available: <node>: <reason>; ...".
//
// Thread-safety: Start/Stop from one thread; the loop runs on its own thread.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tessera::demo {

class KubeSchedulerStandIn {
 public:
  KubeSchedulerStandIn(std::string api_url, std::string extender_url,
                       std::vector<std::string> nodes, std::string scheduler_name);
  ~KubeSchedulerStandIn();  // Stop()

  void Start();
  void Stop();

 private:
  void Loop();
  void ScheduleOnce();

  const std::string api_url_;
  const std::string extender_url_;
  const std::vector<std::string> nodes_;
  const std::string scheduler_name_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera::demo
