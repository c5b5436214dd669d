// FakeBinder: an in-memory Binder for tests. It records every Binding, can be told to fail, and
// can hand each accepted Binding to a callback (to play the API server's watch back into a
// ClusterState). Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "scheduler/binder.h"

namespace tessera::scheduler::testing {

class FakeBinder : public Binder {
 public:
  Status Bind(const BindingRequest& request) override {
    std::function<void(const BindingRequest&)> on_bound;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!fail_with_.ok()) return fail_with_;
      bindings_.push_back(request);
      on_bound = on_bound_;
    }
    if (on_bound) on_bound(request);
    return Status::Ok();
  }

  // Every later Bind returns `status` (OK to succeed again).
  void FailWith(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_with_ = std::move(status);
  }
  void OnBound(std::function<void(const BindingRequest&)> f) {
    std::lock_guard<std::mutex> lock(mu_);
    on_bound_ = std::move(f);
  }
  std::vector<BindingRequest> bindings() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bindings_;
  }

 private:
  mutable std::mutex mu_;
  Status fail_with_;
  std::vector<BindingRequest> bindings_;
  std::function<void(const BindingRequest&)> on_bound_;
};

}  // namespace tessera::scheduler::testing
