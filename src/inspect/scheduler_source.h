// Reads the cluster's GPU picture from the Tessera scheduler's `GET /inspect` (its in-memory
// state: src/scheduler/inspect.h has the format), with a bearer token where the scheduler asks
// one (scheduler.read-access=token). Thread-compatible.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "inspect/cluster_view.h"

namespace tessera::inspect {

struct SchedulerSnapshot {
  ClusterView view;                    // not yet Finish()ed
  std::vector<std::string> all_nodes;  // the nodes the scheduler knows
};

// Turns an /inspect document into a view (its quotas, DRA shares and the pending pods' last
// filter reasons too, when it has them); with `ns`, only the pods, claims and quotas of that
// namespace.
// InvalidArgument naming the field when it has the wrong shape.
Result<SchedulerSnapshot> ParseSchedulerInspect(const nlohmann::json& doc,
                                                const std::string& ns = "");

struct SchedulerClientOptions {
  std::string ca_file;  // PEM bundle for an https:// URL ("" = the system's trust store)
  std::chrono::milliseconds timeout{10'000};  // 0 = none
  std::string ns;                             // only the pods of this namespace ("" = all)
  std::string token;  // sent as "Authorization: Bearer <token>" when not empty
};

// GETs `<base_url><path>` (http:// or https://) and returns the body of a 200 answer. Unavailable
// when the scheduler cannot be reached or answers otherwise (a 401 or 403 says which token it
// needs), InvalidArgument for a malformed URL.
Result<std::string> GetFromScheduler(const std::string& base_url, const std::string& path,
                                     const SchedulerClientOptions& options);

// GETs `<base_url>/inspect` (http:// or https://). Unavailable when the scheduler cannot be
// reached or answers other than 200, InvalidArgument for a malformed URL or body.
Result<SchedulerSnapshot> ReadFromScheduler(const std::string& base_url,
                                            const SchedulerClientOptions& options);

}  // namespace tessera::inspect
