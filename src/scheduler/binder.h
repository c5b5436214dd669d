// Binder: posts a pod's Binding to the API server (the one side effect of `bind`).
//
// The scheduler talks to the API server only through this interface, so tests use an in-memory
// fake and the real client (src/kube) plugs in without touching the engine. Implementations must
// be thread-safe: many binds run at once.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/cluster_state.h"

namespace tessera::scheduler {

struct BindingRequest {
  PodId pod;
  std::string node;
  std::map<std::string, std::string> annotations;  // merged into the pod with spec.nodeName
};

class Binder {
 public:
  virtual ~Binder() = default;
  // Creates the Binding; OK once the API server accepted it, otherwise the error it gave.
  virtual Status Bind(const BindingRequest& request) = 0;
};

// The v1 Binding object for `request`, as POSTed to
// /api/v1/namespaces/<ns>/pods/<name>/binding.
nlohmann::json BindingObject(const BindingRequest& request);

}  // namespace tessera::scheduler
