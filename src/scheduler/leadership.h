// Leadership: whether this scheduler replica may bind pods and preempt.
//
// With one replica (no leader election) it always may. With several, only the holder of the
// Lease binds and preempts (scheduler.leader-election.*, scheduler_app.cc); the others keep their
// state current from their watches, answer filter, prioritize and the webhooks, and refuse binds,
// so that two replicas never decide for the same GPUs. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace tessera::scheduler {

class Leadership {
 public:
  // `elected` false: one replica, always leading. True: several, not leading until Lead();
  // `leader` names the replica that leads ("" when none does), for refusals.
  explicit Leadership(bool elected = false, std::function<std::string()> leader = {})
      : leading_(!elected), leader_(std::move(leader)) {}

  bool Leading() const { return leading_.load(); }
  void Lead() { leading_ = true; }
  void Follow() { leading_ = false; }
  // "the leader is X" / "no replica leads at the moment".
  std::string Describe() const {
    std::string name = leader_ ? leader_() : "";
    return name.empty() ? "no replica leads at the moment" : "the leader is " + name;
  }

 private:
  std::atomic<bool> leading_;
  const std::function<std::string()> leader_;
};

}  // namespace tessera::scheduler
