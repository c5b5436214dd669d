// AnnotationGuard: who may set Tessera's protocol annotations on a pod.
//
// tessera.io/allocation reaches a pod only in the scheduler's Binding (the pods/binding
// subresource, which the pod webhooks do not see), and tessera.io/allocated and
// tessera.io/allocation-failed only in the node agent's own pod updates, each with its
// "-signature" annotation beside it (and tessera.io/gpus-signature belongs on Nodes only);
// tessera.io/resize-status only in the scheduler's answer to a resize (docs/resize.md). So the
// validating webhook refuses
//   - a pod CREATE that carries any of them, whoever sends it;
//   - an UPDATE that sets, changes or removes one, unless the user is one of `trusted` (Tessera's
//     service accounts, scheduler.webhook.trusted-users).
// Without this a pod owner could free their own charge (allocation-failed=x) or rewrite the
// decision. Immutable after construction: thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {

// The service accounts of deploy/: the scheduler and the node agent in tessera-system.
std::vector<std::string> DefaultTrustedUsers();

class AnnotationGuard {
 public:
  explicit AnnotationGuard(std::vector<std::string> trusted) : trusted_(std::move(trusted)) {}

  // Empty when `operation` ("CREATE", "UPDATE") of `object` (with `old_object` for UPDATE, may be
  // null) by `user` may go on; otherwise the reason, naming the annotation and the user.
  std::string Check(const std::string& operation, const nlohmann::json& object,
                    const nlohmann::json* old_object, const std::string& user) const;

 private:
  std::vector<std::string> trusted_;
};

}  // namespace tessera::scheduler
