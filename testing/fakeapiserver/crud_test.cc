// Create, get, list (selectors, pagination), update and delete through HTTP.
#include <set>

#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

TEST_F(FakeApiServerTest, DefaultNamespacesExistAtStart) {
  HttpAnswer a = client_->Get("/api/v1/namespaces");
  ASSERT_EQ(a.status, 200);
  std::set<std::string> names;
  for (const json& ns : a.body["items"]) names.insert(ns["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"default", "kube-system"}));
  EXPECT_EQ(a.body["kind"], "NamespaceList");
}

TEST_F(FakeApiServerTest, CreateFillsServerFieldsAndGetReturnsIt) {
  json pod = CreatePod("p1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["namespace"], "default");
  EXPECT_EQ(pod["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_TRUE(pod["metadata"]["creationTimestamp"].is_string());
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  HttpAnswer got = client_->Get("/api/v1/namespaces/default/pods/p1");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body, pod);
}

TEST_F(FakeApiServerTest, ResourceVersionsIncreaseGloballyAcrossTypes) {
  json a = CreatePod("a");
  HttpAnswer node = client_->Post("/api/v1/nodes", json{{"metadata", {{"name", "n1"}}}});
  ASSERT_EQ(node.status, 201) << node.body.dump();
  json b = CreatePod("b");
  EXPECT_LT(std::stoull(Rv(a)), std::stoull(Rv(node.body)));
  EXPECT_LT(std::stoull(Rv(node.body)), std::stoull(Rv(b)));
  HttpAnswer list = client_->Get("/api/v1/pods");
  EXPECT_EQ(list.body["metadata"]["resourceVersion"], Rv(b));
}

TEST_F(FakeApiServerTest, GenerateNameMakesAUniqueName) {
  json pod = PodJson("");
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = "worker-";
  HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", pod);
  HttpAnswer b = client_->Post("/api/v1/namespaces/default/pods", pod);
  ASSERT_EQ(a.status, 201);
  ASSERT_EQ(b.status, 201);
  std::string name = a.body["metadata"]["name"];
  EXPECT_EQ(name.rfind("worker-", 0), 0u);
  EXPECT_EQ(name.size(), 12u);
  EXPECT_NE(name, b.body["metadata"]["name"].get<std::string>());
}

TEST_F(FakeApiServerTest, DuplicateIsAlreadyExistsAndMissingIsNotFound) {
  CreatePod("p1");
  HttpAnswer dup = client_->Post("/api/v1/namespaces/default/pods", PodJson("p1"));
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.body["reason"], "AlreadyExists");
  EXPECT_EQ(dup.body["message"], "pods \"p1\" already exists");
  HttpAnswer missing = client_->Get("/api/v1/namespaces/default/pods/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["kind"], "Status");
  EXPECT_EQ(missing.body["reason"], "NotFound");
  EXPECT_EQ(missing.body["message"], "pods \"nope\" not found");
  EXPECT_EQ(missing.body["details"]["name"], "nope");
  HttpAnswer no_ns = client_->Post("/api/v1/namespaces/ghost/pods", PodJson("p1"));
  EXPECT_EQ(no_ns.status, 404);
  EXPECT_EQ(no_ns.body["message"], "namespaces \"ghost\" not found");
}

TEST_F(FakeApiServerTest, ListFiltersByFieldAndLabelSelectors) {
  CreatePod("a", {{"app", "web"}});
  CreatePod("b", {{"app", "db"}});
  CreatePod("c");
  client_->Post("/api/v1/namespaces/default/pods/a/binding",
                json{{"metadata", {{"name", "a"}}}, {"target", {{"name", "n1"}}}});
  auto names = [&](const std::string& query) {
    HttpAnswer a = client_->Get("/api/v1/pods?" + query);
    EXPECT_EQ(a.status, 200) << query << ": " << a.body.dump();
    std::vector<std::string> out;
    for (const json& p : a.body["items"]) out.push_back(p["metadata"]["name"]);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3Dn1"), V{"a"});
  EXPECT_EQ(names("fieldSelector=spec.nodeName%3D"), (V{"b", "c"}));
  EXPECT_EQ(names("fieldSelector=spec.nodeName!%3Dn1,metadata.name%3D%3Db"), V{"b"});
  EXPECT_EQ(names("fieldSelector=status.phase%3DPending"), (V{"a", "b", "c"}));
  EXPECT_EQ(names("labelSelector=app"), (V{"a", "b"}));
  EXPECT_EQ(names("labelSelector=!app"), V{"c"});
  EXPECT_EQ(names("labelSelector=app%20in%20(web,x)"), V{"a"});
  EXPECT_EQ(names("labelSelector=app%20notin%20(web)"), (V{"b", "c"}));
  EXPECT_EQ(names("labelSelector=app!%3Dweb&fieldSelector=metadata.namespace%3Ddefault"),
            (V{"b", "c"}));
  HttpAnswer bad = client_->Get("/api/v1/pods?fieldSelector=spec.bogus%3D1");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["message"], "field label not supported: spec.bogus");
}

TEST_F(FakeApiServerTest, ListOfOneNamespaceOrAll) {
  ASSERT_EQ(client_->Post("/api/v1/namespaces", json{{"metadata", {{"name", "team"}}}}).status,
            201);
  CreatePod("a");
  ASSERT_EQ(client_->Post("/api/v1/namespaces/team/pods", PodJson("b")).status, 201);
  EXPECT_EQ(client_->Get("/api/v1/namespaces/team/pods").body["items"].size(), 1u);
  EXPECT_EQ(client_->Get("/api/v1/pods").body["items"].size(), 2u);
  // Deleting a namespace deletes what is in it.
  ASSERT_EQ(client_->Delete("/api/v1/namespaces/team").status, 200);
  EXPECT_EQ(client_->Get("/api/v1/pods").body["items"].size(), 1u);
}

TEST_F(FakeApiServerTest, PaginationWalksEveryItemOnceWithLimitAndContinue) {
  for (int i = 0; i < 7; ++i) CreatePod("p" + std::to_string(i));
  std::vector<std::string> seen;
  std::string cont;
  std::string first_rv;
  int pages = 0;
  do {
    HttpAnswer a = client_->Get("/api/v1/namespaces/default/pods?limit=3" +
                                (cont.empty() ? "" : "&continue=" + cont));
    ASSERT_EQ(a.status, 200) << a.body.dump();
    if (first_rv.empty()) first_rv = a.body["metadata"]["resourceVersion"];
    EXPECT_EQ(a.body["metadata"]["resourceVersion"], first_rv);
    for (const json& p : a.body["items"]) seen.push_back(p["metadata"]["name"]);
    cont = a.body["metadata"].value("continue", "");
    if (!cont.empty()) {
      EXPECT_GT(a.body["metadata"]["remainingItemCount"].get<int>(), 0);
    }
    ASSERT_LT(++pages, 10);
  } while (!cont.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}));

  HttpAnswer bad = client_->Get("/api/v1/pods?limit=2&continue=not-a-token");
  EXPECT_EQ(bad.status, 400);
}

TEST_F(FakeApiServerTest, ContinueTokenOlderThanHistoryIsExpired) {
  for (int i = 0; i < 3; ++i) CreatePod("p" + std::to_string(i));
  HttpAnswer first = client_->Get("/api/v1/pods?limit=1");
  std::string cont = first.body["metadata"]["continue"];
  CreatePod("later");
  server_->ExpireHistory();  // the list's version is now before the oldest one kept
  HttpAnswer next = client_->Get("/api/v1/pods?limit=1&continue=" + cont);
  EXPECT_EQ(next.status, 410);
  EXPECT_EQ(next.body["reason"], "Expired");
}

TEST_F(FakeApiServerTest, UpdateChecksResourceVersionAndKeepsStatus) {
  json pod = CreatePod("p1");
  json changed = pod;
  changed["metadata"]["labels"] = {{"x", "1"}};
  changed["status"]["phase"] = "Running";  // ignored: status changes go through /status
  HttpAnswer ok = client_->Put("/api/v1/namespaces/default/pods/p1", changed);
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["metadata"]["labels"]["x"], "1");
  EXPECT_EQ(ok.body["status"]["phase"], "Pending");
  EXPECT_NE(Rv(ok.body), Rv(pod));
  EXPECT_EQ(ok.body["metadata"]["uid"], pod["metadata"]["uid"]);

  HttpAnswer stale = client_->Put("/api/v1/namespaces/default/pods/p1", changed);
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
  EXPECT_EQ(stale.body["message"],
            "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please "
            "apply your changes to the latest version and try again");

  json status_update = ok.body;
  status_update["status"]["phase"] = "Running";
  HttpAnswer status = client_->Put("/api/v1/namespaces/default/pods/p1/status", status_update);
  ASSERT_EQ(status.status, 200) << status.body.dump();
  EXPECT_EQ(status.body["status"]["phase"], "Running");

  HttpAnswer renamed = client_->Put("/api/v1/namespaces/default/pods/p1", PodJson("other"));
  EXPECT_EQ(renamed.status, 400);
}

TEST_F(FakeApiServerTest, UnchangedUpdateKeepsTheResourceVersion) {
  json pod = CreatePod("p1");
  HttpAnswer same = client_->Put("/api/v1/namespaces/default/pods/p1", pod);
  ASSERT_EQ(same.status, 200);
  EXPECT_EQ(Rv(same.body), Rv(pod));
}

TEST_F(FakeApiServerTest, DeleteReturnsTheObjectAndHonoursPreconditions) {
  json pod = CreatePod("p1");
  HttpAnswer wrong = client_->Delete("/api/v1/namespaces/default/pods/p1",
                                     json{{"preconditions", {{"uid", "other"}}}}.dump());
  EXPECT_EQ(wrong.status, 409);
  HttpAnswer del =
      client_->Delete("/api/v1/namespaces/default/pods/p1",
                      json{{"preconditions", {{"uid", pod["metadata"]["uid"]}}}}.dump());
  ASSERT_EQ(del.status, 200) << del.body.dump();
  EXPECT_EQ(del.body["metadata"]["name"], "p1");
  EXPECT_GT(std::stoull(Rv(del.body)), std::stoull(Rv(pod)));
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/p1").status, 404);
  EXPECT_EQ(client_->Delete("/api/v1/namespaces/default/pods/p1").status, 404);
}

TEST_F(FakeApiServerTest, LeasesAndEventsAreServed) {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "tessera-scheduler"}}},
                {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
  HttpAnswer created =
      client_->Post("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease);
  ASSERT_EQ(created.status, 201) << created.body.dump();
  json renewed = created.body;
  renewed["spec"]["holderIdentity"] = "b";
  HttpAnswer put = client_->Put(
      "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tessera-scheduler", renewed);
  ASSERT_EQ(put.status, 200);
  EXPECT_EQ(put.body["spec"]["holderIdentity"], "b");
  EXPECT_EQ(put.body["metadata"]["generation"], 2);

  json event = {{"metadata", {{"name", "p1.1"}}},
                {"involvedObject", {{"kind", "Pod"}, {"name", "p1"}, {"namespace", "default"}}},
                {"reason", "Bound"},
                {"type", "Normal"},
                {"message", "bound to n1"}};
  ASSERT_EQ(client_->Post("/api/v1/namespaces/default/events", event).status, 201);
  HttpAnswer list =
      client_->Get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp1");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["items"].size(), 1u);
  EXPECT_EQ(list.body["kind"], "EventList");
}

}  // namespace
}  // namespace tessera::testing
