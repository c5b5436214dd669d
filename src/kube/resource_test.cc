#include "kube/resource.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

TEST(ResourceTest, Paths) {
  EXPECT_EQ(CollectionPath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(CollectionPath(kPods, "default"), "/api/v1/namespaces/default/pods");
  EXPECT_EQ(CollectionPath(kNodes, "ignored"), "/api/v1/nodes");
  EXPECT_EQ(ObjectPath(kNodes, "", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(ObjectPath(kPods, "d", "p1", "binding"), "/api/v1/namespaces/d/pods/p1/binding");
  EXPECT_EQ(ObjectPath(kLeases, "kube-system", "tessera"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tessera");
  EXPECT_EQ(CollectionPath(kEvents, "d"), "/api/v1/namespaces/d/events");
}

TEST(ResourceTest, DynamicResourceAllocationPaths) {
  EXPECT_EQ(ObjectPath(kResourceSlices, "ignored", "n1-gpu.tessera.io"),
            "/apis/resource.k8s.io/v1/resourceslices/n1-gpu.tessera.io");
  EXPECT_EQ(ObjectPath(kDeviceClasses, "", "gpu.tessera.io"),
            "/apis/resource.k8s.io/v1/deviceclasses/gpu.tessera.io");
  EXPECT_EQ(ObjectPath(kResourceClaims, "ml", "c1"),
            "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/c1");
}

TEST(ResourceTest, QueryEncodingSkipsEmptyValues) {
  EXPECT_EQ(
      QueryString({{"fieldSelector", "spec.nodeName=n1"}, {"labelSelector", ""}, {"limit", "500"}}),
      "?fieldSelector=spec.nodeName%3Dn1&limit=500");
  EXPECT_EQ(QueryString({{"a", ""}}), "");
  EXPECT_EQ(UrlEncode("app in (a, b),x!=y"), "app%20in%20%28a%2C%20b%29%2Cx%21%3Dy");
  EXPECT_EQ(UrlEncode("a-b.c_d~e"), "a-b.c_d~e");
}

}  // namespace
}  // namespace tessera::kube
