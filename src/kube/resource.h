// Resource: one kind of API object (pods, nodes, leases, events, resource claims) and the URL paths
// that reach it.
//
//   ObjectPath(kPods, "default", "p1")          -> /api/v1/namespaces/default/pods/p1
//   CollectionPath(kPods, "")                   -> /api/v1/pods (all namespaces)
//   CollectionPath(kLeases, "kube-system")      ->
//   /apis/coordination.k8s.io/v1/namespaces/kube-system/leases
// Plain constants and pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::kube {

struct Resource {
  std::string_view group_version_path;  // "/api/v1" or "/apis/<group>/<version>"
  std::string_view plural;              // "pods"
  std::string_view kind;                // "Pod"
  std::string_view api_version;         // "v1", "coordination.k8s.io/v1"
  bool namespaced = true;
};

inline constexpr Resource kPods{"/api/v1", "pods", "Pod", "v1", true};
inline constexpr Resource kNodes{"/api/v1", "nodes", "Node", "v1", false};
inline constexpr Resource kNamespaces{"/api/v1", "namespaces", "Namespace", "v1", false};
inline constexpr Resource kEvents{"/api/v1", "events", "Event", "v1", true};
inline constexpr Resource kSecrets{"/api/v1", "secrets", "Secret", "v1", true};
inline constexpr Resource kResourceQuotas{"/api/v1", "resourcequotas", "ResourceQuota", "v1", true};
inline constexpr Resource kMutatingWebhookConfigurations{
    "/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1", false};
inline constexpr Resource kValidatingWebhookConfigurations{
    "/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1", false};
inline constexpr Resource kLeases{"/apis/coordination.k8s.io/v1", "leases", "Lease",
                                  "coordination.k8s.io/v1", true};
// Dynamic Resource Allocation (docs/dra.md).
inline constexpr Resource kDeviceClasses{"/apis/resource.k8s.io/v1", "deviceclasses", "DeviceClass",
                                         "resource.k8s.io/v1", false};
inline constexpr Resource kResourceClaims{"/apis/resource.k8s.io/v1", "resourceclaims",
                                          "ResourceClaim", "resource.k8s.io/v1", true};
inline constexpr Resource kResourceClaimTemplates{"/apis/resource.k8s.io/v1",
                                                  "resourceclaimtemplates", "ResourceClaimTemplate",
                                                  "resource.k8s.io/v1", true};
inline constexpr Resource kResourceSlices{"/apis/resource.k8s.io/v1", "resourceslices",
                                          "ResourceSlice", "resource.k8s.io/v1", false};

// The collection: namespaced when `ns` is set and the resource is namespaced, else cluster-wide.
std::string CollectionPath(const Resource& resource, std::string_view ns);
// One object, with an optional subresource ("status", "binding").
std::string ObjectPath(const Resource& resource, std::string_view ns, std::string_view name,
                       std::string_view subresource = "");

// Percent-encodes a path segment or query value (RFC 3986 unreserved characters stay).
std::string UrlEncode(std::string_view text);
// "?a=1&b=x%3Dy" from pairs whose value is not empty; "" when none.
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace tessera::kube
