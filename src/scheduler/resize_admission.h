// ResizeAdmission: what the validating webhook checks of a resize request (`tessera.io/resize`,
// docs/resize.md) when a pod is created or updated: a new pod may not carry one; a request that is
// set or changed must read (annotations/resize.h), name an app container that holds GPUs in the
// pod's decision, and carry an id not answered yet. Whether it fits the GPUs and the quota is the
// scheduler's answer, not the webhook's. Pure function: thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {

// Empty when `operation` ("CREATE", "UPDATE") of pod `object` (with `old_object` for UPDATE, may
// be null) may go on as far as resize requests go; otherwise why not and what is allowed.
std::string ResizeRequestDenial(const std::string& operation, const nlohmann::json& object,
                                const nlohmann::json* old_object);

}  // namespace tessera::scheduler
