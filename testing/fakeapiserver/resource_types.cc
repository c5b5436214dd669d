#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

const std::vector<ResourceType>& ResourceTypes() {
  static const std::vector<ResourceType> kTypes = {
      {.plural = "namespaces",
       .singular = "namespace",
       .kind = "Namespace",
       .version = "v1",
       .namespaced = false,
       .has_status = true,
       .short_names = {"ns"},
       .field_labels = {"status.phase"}},
      {.plural = "pods",
       .singular = "pod",
       .kind = "Pod",
       .version = "v1",
       .has_status = true,
       .short_names = {"po"},
       .field_labels = {"spec.nodeName", "spec.schedulerName", "status.phase",
                        "spec.serviceAccountName", "status.podIP"}},
      {.plural = "nodes",
       .singular = "node",
       .kind = "Node",
       .version = "v1",
       .namespaced = false,
       .has_status = true,
       .short_names = {"no"},
       .field_labels = {"spec.unschedulable"}},
      {.plural = "events",
       .singular = "event",
       .kind = "Event",
       .version = "v1",
       .short_names = {"ev"},
       .field_labels = {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                        "involvedObject.uid", "reason", "type", "source"}},
      {.plural = "secrets", .singular = "secret", .kind = "Secret", .version = "v1"},
      {.plural = "resourcequotas",
       .singular = "resourcequota",
       .kind = "ResourceQuota",
       .version = "v1",
       .has_status = true,
       .short_names = {"quota"}},
      {.plural = "leases",
       .singular = "lease",
       .kind = "Lease",
       .group = "coordination.k8s.io",
       .version = "v1"},
      // Dynamic Resource Allocation: claims (the scheduler writes status.allocation; tests may
      // create them allocated) and their templates.
      {.plural = "resourceclaims",
       .singular = "resourceclaim",
       .kind = "ResourceClaim",
       .group = "resource.k8s.io",
       .version = "v1",
       .has_status = true},
      {.plural = "resourceclaimtemplates",
       .singular = "resourceclaimtemplate",
       .kind = "ResourceClaimTemplate",
       .group = "resource.k8s.io",
       .version = "v1"},
      {.plural = "resourceslices",
       .singular = "resourceslice",
       .kind = "ResourceSlice",
       .group = "resource.k8s.io",
       .version = "v1",
       .namespaced = false,
       .field_labels = {"spec.nodeName", "spec.driver"}},
  };
  return kTypes;
}

const ResourceType* FindResourceType(std::string_view group, std::string_view version,
                                     std::string_view plural) {
  for (const ResourceType& t : ResourceTypes()) {
    if (t.group == group && t.version == version && t.plural == plural) return &t;
  }
  return nullptr;
}

}  // namespace tessera::testing
