// pods/binding: node and annotations in one update; 409 when bound or the UID differs.
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

const std::string kBinding = "/api/v1/namespaces/default/pods/p1/binding";

json Binding(const std::string& node, const json& annotations = nullptr,
             const std::string& uid = "") {
  json b = {{"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", "p1"}, {"namespace", "default"}}},
            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!annotations.is_null()) b["metadata"]["annotations"] = annotations;
  if (!uid.empty()) b["metadata"]["uid"] = uid;
  return b;
}

TEST_F(FakeApiServerTest, BindingSetsNodeAndAnnotationsInOneModifiedEvent) {
  std::string start = client_->Get("/api/v1/pods").body["metadata"]["resourceVersion"];
  json pod = CreatePod("p1");
  client_->Patch("/api/v1/namespaces/default/pods/p1", "application/merge-patch+json",
                 R"({"metadata":{"annotations":{"keep":"me"}}})");
  WatchReader watch(server_->url(),
                    "/api/v1/namespaces/default/pods?watch=1&resourceVersion=" + start);
  HttpAnswer bound =
      client_->Post(kBinding, Binding("n1", {{"tessera.io/gpu", "GPU-1"}}, pod["metadata"]["uid"]));
  ASSERT_EQ(bound.status, 201) << bound.body.dump();
  EXPECT_EQ(bound.body["status"], "Success");
  json now = client_->Get("/api/v1/namespaces/default/pods/p1").body;
  EXPECT_EQ(now["spec"]["nodeName"], "n1");
  EXPECT_EQ(now["metadata"]["annotations"], (json{{"keep", "me"}, {"tessera.io/gpu", "GPU-1"}}));
  EXPECT_EQ(now["status"]["conditions"][0]["type"], "PodScheduled");

  // The watch from the start replays ADDED, the annotation MODIFIED, then one MODIFIED that
  // carries both the node and the annotation.
  std::vector<json> events;
  while (events.size() < 3) {
    std::optional<json> e = watch.Next();
    ASSERT_TRUE(e.has_value());
    events.push_back(*e);
  }
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[2]["type"], "MODIFIED");
  EXPECT_EQ(events[2]["object"]["spec"]["nodeName"], "n1");
  EXPECT_EQ(events[2]["object"]["metadata"]["annotations"]["tessera.io/gpu"], "GPU-1");
  EXPECT_FALSE(watch.Next(std::chrono::milliseconds(300)).has_value());
}

TEST_F(FakeApiServerTest, BindingAnAlreadyBoundPodIsConflict) {
  CreatePod("p1");
  ASSERT_EQ(client_->Post(kBinding, Binding("n1")).status, 201);
  HttpAnswer again = client_->Post(kBinding, Binding("n2"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body["reason"], "Conflict");
  EXPECT_NE(again.body["message"].get<std::string>().find("already assigned to node \"n1\""),
            std::string::npos);
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/p1").body["spec"]["nodeName"], "n1");
}

TEST_F(FakeApiServerTest, BindingWithAnotherUidIsConflict) {
  CreatePod("p1");
  HttpAnswer wrong = client_->Post(kBinding, Binding("n1", nullptr, "not-the-uid"));
  EXPECT_EQ(wrong.status, 409);
  EXPECT_FALSE(
      client_->Get("/api/v1/namespaces/default/pods/p1").body["spec"].contains("nodeName"));
}

TEST_F(FakeApiServerTest, BindingAMissingPodOrWithoutTargetOrOfAnotherKind) {
  EXPECT_EQ(client_->Post(kBinding, Binding("n1")).status, 404);
  CreatePod("p1");
  EXPECT_EQ(client_->Post(kBinding, Binding("")).status, 422);
  EXPECT_EQ(client_->Post(kBinding, std::string("{oops")).status, 400);
  json wrong_kind = Binding("n1");
  wrong_kind["kind"] = "Pod";
  HttpAnswer a = client_->Post(kBinding, wrong_kind);
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body["message"],
            "Pod in version \"v1\" cannot be handled as a Binding: converting (v1.Pod) to "
            "(core.Binding): unknown conversion");
  EXPECT_EQ(client_->Get(kBinding).status, 405);
}

}  // namespace
}  // namespace tessera::testing
