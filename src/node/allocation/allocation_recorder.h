// AllocationRecorder: writes what PreStartContainer decided onto the pod, off kubelet's path.
// PreStartContainer must answer within kubelet's deadline and its decision is local, so the
// writes (`tessera.io/allocated` merged per container, `tessera.io/allocation-failed`) are queued
// here and made by one worker thread, retried (0.5 s, doubling up to 30 s) while the pod exists.
//
// `tessera.io/allocated` is rewritten whole at each write; its base is the pod cache plus what
// this recorder wrote that the cache does not show yet (the containers of one pod start faster
// than the watch brings each write back), so no container's entry is lost. With signing on, both
// annotations are written with their signatures, and a cached record that does not verify is not
// taken as the base (this agent would otherwise sign entries it never wrote).
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "annotations/allocated.h"

#include "annotations/signing.h"
#include "node/allocation/pod_view.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

class AllocationRecorder {
 public:
  // The sources must outlive the recorder.
  AllocationRecorder(PodSource& pods, ApiWriter& writer, annotations::Signing signing = {});
  ~AllocationRecorder();  // stops the worker; queued writes not yet made are dropped (logged)

  // Queues owner's entry {"allocation": id, "devices": uuids} in tessera.io/allocated.
  void Allocated(const ContainerRef& owner, const std::string& allocation_id,
                 const std::vector<std::string>& uuids);
  // Queues tessera.io/allocation-failed: reason.
  void Failed(const ContainerRef& owner, const std::string& reason);

  // Blocks until the queue is empty and no write is in flight (tests, benchmarks), at most
  // `timeout`; false on timeout.
  bool Flush(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  struct Write {
    ContainerRef owner;
    bool failed = false;
    std::string allocation_id, reason;
    std::vector<std::string> uuids;
    int attempts = 0;
    std::chrono::steady_clock::time_point not_before{};
  };
  void Run();
  // Makes one write; false when it should be tried again.
  bool Make(const Write& w);
  Status WriteAllocated(const Write& w);
  // The pod's tessera.io/allocated as the cache has it: empty when there is none, it is
  // malformed, or it does not verify (a refusal reported naming `what`, unless it is empty).
  annotations::Allocated CachedAllocated(const PodRef& pod, const std::string& what) const;

  PodSource& pods_;
  ApiWriter& writer_;
  const annotations::Signing signing_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Write> queue_;  // guarded by mu_
  bool busy_ = false;        // a write is in flight; guarded by mu_
  bool stop_ = false;        // guarded by mu_

  // tessera.io/allocated as last written, per pod UID, until the cache shows it (worker only).
  struct Recorded {
    std::string ns, pod;
    annotations::Allocated value;
  };
  std::unordered_map<std::string, Recorded> recorded_;
  std::thread worker_;
};

}  // namespace tessera::node
