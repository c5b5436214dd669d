// Watches: replay from a resourceVersion, initial state, bookmarks, 410, timeouts, selector
// transitions, closing.
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string ListRv(TestClient& c) {
  return c.Get("/api/v1/pods").body["metadata"]["resourceVersion"];
}

json NextEvent(WatchReader& w) {
  std::optional<json> e = w.Next();
  EXPECT_TRUE(e.has_value()) << "no watch event within 10 s";
  return e.value_or(json());
}

TEST_F(FakeApiServerTest, WatchReplaysHistoryAfterTheGivenVersionThenFollows) {
  std::string start = ListRv(*client_);
  CreatePod("a");
  json b = CreatePod("b");
  client_->Delete("/api/v1/namespaces/default/pods/a");
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + start);
  json e1 = NextEvent(w), e2 = NextEvent(w), e3 = NextEvent(w);
  EXPECT_EQ(e1["type"], "ADDED");
  EXPECT_EQ(e1["object"]["metadata"]["name"], "a");
  EXPECT_EQ(e2["type"], "ADDED");
  EXPECT_EQ(e2["object"]["metadata"]["name"], "b");
  EXPECT_EQ(e3["type"], "DELETED");
  EXPECT_EQ(e3["object"]["metadata"]["name"], "a");
  EXPECT_EQ(w.status(), 200);
  client_->Patch("/api/v1/namespaces/default/pods/b", "application/merge-patch+json",
                 R"({"metadata":{"labels":{"x":"y"}}})");
  json e4 = NextEvent(w);
  EXPECT_EQ(e4["type"], "MODIFIED");
  EXPECT_GT(std::stoull(Rv(e4["object"])), std::stoull(Rv(b)));
}

TEST_F(FakeApiServerTest, WatchResumedFromLastSeenVersionMissesAndRepeatsNothing) {
  std::string start = ListRv(*client_);
  std::string last;
  {
    WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + start);
    CreatePod("a");
    last = Rv(NextEvent(w)["object"]);
  }  // connection dropped
  CreatePod("b");
  CreatePod("c");
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + last);
  EXPECT_EQ(NextEvent(w)["object"]["metadata"]["name"], "b");
  EXPECT_EQ(NextEvent(w)["object"]["metadata"]["name"], "c");
  EXPECT_FALSE(w.Next(milliseconds(300)).has_value());
}

TEST_F(FakeApiServerTest, WatchWithoutVersionStartsWithTheCurrentState) {
  CreatePod("a");
  WatchReader w(server_->url(), "/api/v1/namespaces/default/pods?watch=true");
  json e = NextEvent(w);
  EXPECT_EQ(e["type"], "ADDED");
  EXPECT_EQ(e["object"]["metadata"]["name"], "a");
  CreatePod("b");
  EXPECT_EQ(NextEvent(w)["object"]["metadata"]["name"], "b");
}

TEST_F(FakeApiServerTest, BookmarksCarryTheCurrentVersion) {
  std::string start = ListRv(*client_);
  json pod = CreatePod("a");
  WatchReader w(server_->url(),
                "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + start);
  EXPECT_EQ(NextEvent(w)["type"], "ADDED");
  json bookmark = NextEvent(w);  // within about a second
  EXPECT_EQ(bookmark["type"], "BOOKMARK");
  EXPECT_EQ(bookmark["object"]["kind"], "Pod");
  EXPECT_EQ(Rv(bookmark["object"]), Rv(pod));
  EXPECT_FALSE(bookmark["object"].contains("spec"));
}

TEST_F(FakeApiServerTest, TooOldVersionIsGone) {
  std::string start = ListRv(*client_);
  CreatePod("a");
  server_->ExpireHistory();
  HttpAnswer a = client_->Get("/api/v1/pods?watch=1&resourceVersion=" + start);
  EXPECT_EQ(a.status, 410);
  EXPECT_EQ(a.body["reason"], "Expired");
  // From the current version all is well.
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + ListRv(*client_));
  CreatePod("b");
  EXPECT_EQ(NextEvent(w)["object"]["metadata"]["name"], "b");
}

TEST_F(FakeApiServerTest, TooOldVersionAsAnErrorEvent) {
  std::string start = ListRv(*client_);
  CreatePod("a");
  ASSERT_EQ(client_->Post("/fake/too-old-as-event?on=true", std::string()).status, 200);
  ASSERT_EQ(client_->Post("/fake/expire-history", std::string()).status, 200);
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + start);
  json e = NextEvent(w);
  EXPECT_EQ(e["type"], "ERROR");
  EXPECT_EQ(e["object"]["kind"], "Status");
  EXPECT_EQ(e["object"]["code"], 410);
  EXPECT_EQ(e["object"]["reason"], "Expired");
  EXPECT_TRUE(w.WaitEnded());
  EXPECT_EQ(w.status(), 200);
}

TEST_F(FakeApiServerTest, BoundedHistoryExpiresOldVersions) {
  FakeApiServer::Options options;
  options.history = 3;
  StartServer(options);
  std::string start = ListRv(*client_);
  for (int i = 0; i < 4; ++i) CreatePod("p" + std::to_string(i));
  EXPECT_EQ(client_->Get("/api/v1/pods?watch=1&resourceVersion=" + start).status, 410);
}

TEST_F(FakeApiServerTest, TimeoutSecondsEndsTheStream) {
  WatchReader w(server_->url(),
                "/api/v1/pods?watch=1&timeoutSeconds=1&resourceVersion=" + ListRv(*client_));
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(w.WaitEnded(seconds(20)));
  EXPECT_GE(std::chrono::steady_clock::now() - begin, milliseconds(900));
}

TEST_F(FakeApiServerTest, SelectorTransitionsBecomeAddedAndDeleted) {
  CreatePod("a");
  WatchReader w(server_->url(),
                "/api/v1/pods?watch=1&labelSelector=app%3Dweb&resourceVersion=" + ListRv(*client_));
  const std::string pod = "/api/v1/namespaces/default/pods/a";
  const char* merge = "application/merge-patch+json";
  client_->Patch(pod, merge, R"({"metadata":{"labels":{"app":"web"}}})");
  client_->Patch(pod, merge, R"({"metadata":{"labels":{"tier":"x"}}})");
  client_->Patch(pod, merge, R"({"metadata":{"labels":{"app":"db"}}})");
  client_->Patch(pod, merge, R"({"metadata":{"annotations":{"unseen":"1"}}})");
  CreatePod("b", {{"app", "web"}});
  json e1 = NextEvent(w), e2 = NextEvent(w), e3 = NextEvent(w), e4 = NextEvent(w);
  EXPECT_EQ(e1["type"], "ADDED");
  EXPECT_EQ(e2["type"], "MODIFIED");
  EXPECT_EQ(e3["type"], "DELETED");
  EXPECT_EQ(e3["object"]["metadata"]["labels"]["app"], "db");
  EXPECT_EQ(e4["type"], "ADDED");
  EXPECT_EQ(e4["object"]["metadata"]["name"], "b");
}

TEST_F(FakeApiServerTest, FieldSelectedWatchSeesOnlyItsNode) {
  CreatePod("a");
  CreatePod("b");
  WatchReader w(
      server_->url(),
      "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&resourceVersion=" + ListRv(*client_));
  json binding = {{"target", {{"name", "n2"}}}};
  client_->Post("/api/v1/namespaces/default/pods/a/binding", binding);
  binding["target"]["name"] = "n1";
  client_->Post("/api/v1/namespaces/default/pods/b/binding", binding);
  json e = NextEvent(w);
  EXPECT_EQ(e["type"], "ADDED");
  EXPECT_EQ(e["object"]["metadata"]["name"], "b");
  EXPECT_FALSE(w.Next(milliseconds(300)).has_value());
}

TEST_F(FakeApiServerTest, CloseWatchesEndsOpenStreamsOnly) {
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + ListRv(*client_));
  ASSERT_TRUE(w.WaitStarted());
  ASSERT_EQ(client_->Post("/fake/close-watches", std::string()).status, 200);
  EXPECT_TRUE(w.WaitEnded());
  WatchReader after(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + ListRv(*client_));
  CreatePod("a");
  EXPECT_EQ(NextEvent(after)["type"], "ADDED");
}

TEST_F(FakeApiServerTest, StopEndsOpenWatchesPromptly) {
  WatchReader w(server_->url(), "/api/v1/pods?watch=1&resourceVersion=" + ListRv(*client_));
  CreatePod("a");
  NextEvent(w);
  auto begin = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_TRUE(w.WaitEnded(seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, seconds(10));
}

}  // namespace
}  // namespace tessera::testing
