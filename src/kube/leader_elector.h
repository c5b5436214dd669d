// LeaderElector: one leader among replicas, through a coordination.k8s.io/v1 Lease.
//
// The leader holds the Lease and renews it every retry_period. A candidate takes it when it is
// free or its record has not changed for lease_duration on the candidate's own clock; updates
// carry the resourceVersion, so two candidates never both win. A leader that cannot renew for
// renew_deadline (< lease_duration) stops leading before anyone else may take over. Stop()
// releases the Lease, so the next candidate takes over at its next try.
// Callbacks run on the elector's thread: on_started_leading when leadership is won,
// on_stopped_leading when it is lost or given up (always after a start, exactly once per start).
// IsLeader/Leader are thread-safe; Stop() must not be called from a callback.
//
//   ASSIGN_OR_RETURN(auto elector, LeaderElector::Create(client, options));
//   elector->Start();  // campaigns on its own thread
//
// Why: docs/kube-client.md, "Leader election".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kube/cancel_token.h"
#include "kube/client.h"

namespace tessera::kube {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name;
  std::string identity;  // unique per replica, e.g. the pod name
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  bool release_on_stop = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
};

class LeaderElector {
 public:
  // InvalidArgument when a name is empty or the durations are not
  // retry_period < renew_deadline < lease_duration.
  static Result<std::unique_ptr<LeaderElector>> Create(Client& client, LeaderElectionConfig config);
  ~LeaderElector();  // Stop()

  // Starts campaigning on a background thread. Call once.
  void Start();
  // Stops campaigning; a leader stops leading (on_stopped_leading) and then, with
  // release_on_stop, releases the Lease, so that the next leader never overlaps the callback.
  // Waits for the thread. Idempotent.
  void Stop();

  bool IsLeader() const { return leading_.load(); }
  // True while this elector says it leads but has not renewed the Lease for lease_duration +
  // `tolerance`: its thread is stuck (in on_started_leading, or a call that outlived its
  // deadline), the Lease has expired on the server and another replica may lead as well. A
  // liveness probe restarts such a replica, as kube-scheduler's /healthz does.
  bool RenewalOverdue(std::chrono::milliseconds tolerance) const;
  // The holder this elector last saw in the Lease ("" when free or unknown).
  std::string Leader() const;

 private:
  LeaderElector(Client& client, LeaderElectionConfig config);
  void Run();
  // One attempt to create, take or renew the Lease, with every call finished by `deadline`; true
  // when we hold it afterwards.
  bool TryAcquireOrRenew(std::chrono::steady_clock::time_point deadline);
  void Release();
  bool Pause(std::chrono::milliseconds delay);  // false when stopped

  Client& client_;
  const LeaderElectionConfig config_;

  std::thread thread_;
  CancelToken cancel_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leading_{false};
  // steady_clock time of the last successful acquire or renewal while leading.
  std::atomic<std::chrono::steady_clock::rep> last_renew_{0};

  mutable std::mutex mutex_;
  std::condition_variable stop_signal_;
  std::string observed_holder_;  // guarded by mutex_
  // The last Lease spec seen and when (our clock): decides whether another holder has expired.
  // Only the elector thread touches these.
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_;
};

}  // namespace tessera::kube
