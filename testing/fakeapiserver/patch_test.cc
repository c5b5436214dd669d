// Merge, strategic-merge and JSON patches, on objects and on /status, with preconditions.
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kStrategic = "application/strategic-merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";
const std::string kPod = "/api/v1/namespaces/default/pods/p1";

TEST_F(FakeApiServerTest, MergePatchAddsAndRemovesAnnotations) {
  CreatePod("p1");
  HttpAnswer a = client_->Patch(kPod, kMerge, R"({"metadata":{"annotations":{"a":"1","b":"2"}}})");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  HttpAnswer b = client_->Patch(kPod, kMerge, R"({"metadata":{"annotations":{"a":null,"c":"3"}}})");
  ASSERT_EQ(b.status, 200);
  EXPECT_EQ(b.body["metadata"]["annotations"], (json{{"b", "2"}, {"c", "3"}}));
  EXPECT_GT(std::stoull(Rv(b.body)), std::stoull(Rv(a.body)));
}

TEST_F(FakeApiServerTest, StrategicMergePatchOfMetadataMapsActsLikeMerge) {
  CreatePod("p1", {{"app", "web"}});
  HttpAnswer a = client_->Patch(kPod, kStrategic, R"({"metadata":{"labels":{"tier":"front"}}})");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["metadata"]["labels"], (json{{"app", "web"}, {"tier", "front"}}));
}

TEST_F(FakeApiServerTest, ResourceVersionInAPatchIsAPrecondition) {
  json pod = CreatePod("p1");
  json patch = {{"metadata", {{"resourceVersion", Rv(pod)}, {"annotations", {{"a", "1"}}}}}};
  HttpAnswer ok = client_->Patch(kPod, kMerge, patch.dump());
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  patch["metadata"]["annotations"]["a"] = "2";  // still the old resourceVersion
  HttpAnswer stale = client_->Patch(kPod, kMerge, patch.dump());
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
  EXPECT_EQ(client_->Get(kPod).body["metadata"]["annotations"]["a"], "1");
}

TEST_F(FakeApiServerTest, StatusSubresourceTakesOnlyStatus) {
  CreatePod("p1");
  HttpAnswer main = client_->Patch(kPod, kMerge, R"({"status":{"phase":"Running"}})");
  ASSERT_EQ(main.status, 200);
  EXPECT_EQ(main.body["status"]["phase"], "Pending");
  HttpAnswer status =
      client_->Patch(kPod + "/status", kMerge,
                     R"({"status":{"phase":"Running"},"metadata":{"labels":{"ignored":"yes"}}})");
  ASSERT_EQ(status.status, 200) << status.body.dump();
  EXPECT_EQ(status.body["status"]["phase"], "Running");
  EXPECT_FALSE(status.body["metadata"].contains("labels"));
}

TEST_F(FakeApiServerTest, JsonPatchOfStatusWithTestOperation) {
  CreatePod("p1");
  HttpAnswer ok = client_->Patch(kPod + "/status", kJsonPatch,
                                 R"([{"op":"test","path":"/status/phase","value":"Pending"},
                                     {"op":"replace","path":"/status/phase","value":"Running"},
                                     {"op":"add","path":"/status/podIP","value":"10.0.0.5"}])");
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["status"]["phase"], "Running");
  EXPECT_EQ(ok.body["status"]["podIP"], "10.0.0.5");
  HttpAnswer failed = client_->Patch(kPod + "/status", kJsonPatch,
                                     R"([{"op":"test","path":"/status/phase","value":"Pending"}])");
  EXPECT_EQ(failed.status, 422);
  EXPECT_EQ(failed.body["kind"], "Status");
}

TEST_F(FakeApiServerTest, JsonPatchOfMetadataAndNodeStatus) {
  ASSERT_EQ(client_->Post("/api/v1/nodes", json{{"metadata", {{"name", "n1"}}}}).status, 201);
  HttpAnswer a =
      client_->Patch("/api/v1/nodes/n1", kJsonPatch,
                     R"([{"op":"add","path":"/metadata/annotations","value":{"k":"v"}}])");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["metadata"]["annotations"]["k"], "v");
  HttpAnswer s = client_->Patch("/api/v1/nodes/n1/status", kMerge,
                                R"({"status":{"capacity":{"tessera.io/vgpu":"8"}}})");
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.body["status"]["capacity"]["tessera.io/vgpu"], "8");
}

TEST_F(FakeApiServerTest, BadPatchesAreRejected) {
  CreatePod("p1");
  EXPECT_EQ(client_->Patch(kPod, kMerge, "{not json").status, 400);
  EXPECT_EQ(client_->Patch(kPod, kJsonPatch, R"({"op":"add"})").status, 400);
  HttpAnswer media = client_->Patch(kPod, "application/apply-patch+yaml", "a: b");
  EXPECT_EQ(media.status, 415);
  EXPECT_EQ(media.body["reason"], "UnsupportedMediaType");
  EXPECT_EQ(client_->Patch("/api/v1/namespaces/default/pods/nope", kMerge, "{}").status, 404);
}

}  // namespace
}  // namespace tessera::testing
