// Client calls against the fake API server: every call, errors, retries, limits, connections.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/fake_server_for_test.h"

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class ClientFakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartFakeServer();
    ASSERT_NE(server_, nullptr);
    client_ = ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
  }
  Json MustCreatePod(const std::string& ns, const std::string& name,
                     std::map<std::string, std::string> labels = {}) {
    Result<Json> pod = client_->Create(kPods, ns, PodObject(ns, name, std::move(labels)));
    EXPECT_TRUE(pod.ok()) << pod.status().ToString();
    return pod.ok() ? *pod : Json();
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientFakeServerTest, PodCreateGetDelete) {
  Json created = MustCreatePod("default", "p1");
  EXPECT_FALSE(UidOf(created).empty());
  Result<Json> got = client_->Get(kPods, "default", "p1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(UidOf(*got), UidOf(created));

  Result<Json> again = client_->Create(kPods, "default", PodObject("default", "p1"));
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrorDetails(again.status()).http_status, 409);

  ASSERT_TRUE(client_->Delete(kPods, "default", "p1").ok());
  Result<Json> gone = client_->Get(kPods, "default", "p1");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  ApiError details = ErrorDetails(gone.status());
  EXPECT_EQ(details.http_status, 404);
  EXPECT_EQ(details.reason, "NotFound");
  EXPECT_NE(details.message.find("p1"), std::string::npos);
}

TEST_F(ClientFakeServerTest, ListWithSelectorsGathersAllPages) {
  for (int i = 0; i < 7; ++i)
    MustCreatePod("default", "p" + std::to_string(i), {{"app", i % 2 ? "odd" : "even"}});
  MustCreatePod("kube-system", "other");
  Result<ObjectList> all = client_->List(kPods, {.page_size = 3});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->items.size(), 8u);
  EXPECT_FALSE(all->resource_version.empty());
  EXPECT_EQ(all->items[0].value("kind", ""), "Pod");

  Result<ObjectList> odd =
      client_->List(kPods, {.ns = "default", .label_selector = "app=odd", .page_size = 2});
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_EQ(odd->items.size(), 3u);

  Result<ObjectList> by_field =
      client_->List(kPods, {.field_selector = "metadata.namespace=kube-system"});
  ASSERT_TRUE(by_field.ok()) << by_field.status().ToString();
  ASSERT_EQ(by_field->items.size(), 1u);
  EXPECT_EQ(NameOf(by_field->items[0]), "other");

  Result<ObjectList> bad = client_->List(kPods, {.label_selector = "app in (unclosed"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ClientFakeServerTest, NodesGetListAndPatchAnnotations) {
  Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}};
  ASSERT_TRUE(client_->Create(kNodes, "", node).ok());
  Result<Json> patched = client_->PatchAnnotations(
      kNodes, "", "n1", {{"tessera.io/gpus", R"({"version":1,"gpus":[]})"}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ(Annotation(*patched, "tessera.io/gpus"), R"({"version":1,"gpus":[]})");
  Result<Json> got = client_->Get(kNodes, "", "n1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Annotation(*got, "tessera.io/gpus"), R"({"version":1,"gpus":[]})");
  Result<ObjectList> nodes = client_->List(kNodes, {});
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->items.size(), 1u);
}

TEST_F(ClientFakeServerTest, AnnotationPatchWithPreconditionConflictsWhenStale) {
  Json pod = MustCreatePod("default", "p1");
  std::string stale = ResourceVersionOf(pod);
  Result<Json> first =
      client_->PatchAnnotations(kPods, "default", "p1", {{"a", "1"}, {"b", "2"}}, stale);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Annotations(*first), (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));

  Result<Json> conflict = client_->PatchAnnotations(kPods, "default", "p1", {{"a", "x"}}, stale);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict);
  EXPECT_EQ(ErrorDetails(conflict.status()).http_status, 409);
  EXPECT_EQ(ErrorDetails(conflict.status()).reason, "Conflict");

  // Retry after re-reading, removing one key.
  Result<Json> removed = client_->PatchAnnotations(kPods, "default", "p1", {{"b", std::nullopt}},
                                                   ResourceVersionOf(*first));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(Annotations(*removed), (std::map<std::string, std::string>{{"a", "1"}}));
}

TEST_F(ClientFakeServerTest, LabelsAndStatusPatches) {
  MustCreatePod("default", "p1");
  Result<Json> labelled = client_->PatchLabels(kPods, "default", "p1", {{"tier", "gpu"}});
  ASSERT_TRUE(labelled.ok()) << labelled.status().ToString();
  EXPECT_EQ(Labels(*labelled).at("tier"), "gpu");
  Result<Json> status = client_->PatchStatus(kPods, "default", "p1", {{"phase", "Running"}});
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(PhaseOf(*status), "Running");
  EXPECT_EQ(Labels(*status).at("tier"), "gpu");
}

TEST_F(ClientFakeServerTest, BindSetsNodeAndAnnotationsOnce) {
  Json pod = MustCreatePod("default", "p1");
  Status bound = client_->Bind("default", "p1", UidOf(pod), "n1",
                               {{"tessera.io/allocation", R"({"version":1})"}});
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  Result<Json> got = client_->Get(kPods, "default", "p1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(NodeNameOf(*got), "n1");
  EXPECT_EQ(Annotation(*got, "tessera.io/allocation"), R"({"version":1})");

  Status twice = client_->Bind("default", "p1", UidOf(pod), "n2", {});
  EXPECT_EQ(twice.code(), StatusCode::kConflict) << twice.ToString();
  MustCreatePod("default", "p2");
  Status wrong_uid = client_->Bind("default", "p2", "not-the-uid", "n1", {});
  EXPECT_EQ(wrong_uid.code(), StatusCode::kConflict) << wrong_uid.ToString();
}

TEST_F(ClientFakeServerTest, CreateEventAboutAPod) {
  Json pod = MustCreatePod("default", "p1");
  Result<Json> event =
      client_->CreateEvent(pod, "Warning", "GpuUnhealthy", "GPU 0 failed", "tessera-node");
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(StringAt(*event, "/involvedObject/name"), "p1");
  EXPECT_EQ(StringAt(*event, "/involvedObject/uid"), UidOf(pod));
  Result<ObjectList> events = client_->List(kEvents, {.ns = "default"});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(StringAt(events->items[0], "/reason"), "GpuUnhealthy");
}

TEST_F(ClientFakeServerTest, LeaseGetCreateUpdate) {
  Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "l1"}, {"namespace", "kube-system"}}},
                {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
  EXPECT_EQ(client_->Get(kLeases, "kube-system", "l1").status().code(), StatusCode::kNotFound);
  Result<Json> created = client_->Create(kLeases, "kube-system", lease);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json renewed = *created;
  renewed["spec"]["renewTime"] = Rfc3339Now(true);
  Result<Json> updated = client_->Update(kLeases, renewed);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  // The old version is a failed precondition now.
  Result<Json> stale = client_->Update(kLeases, renewed);
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  Result<Json> got = client_->Get(kLeases, "kube-system", "l1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(StringAt(*got, "/spec/renewTime"), renewed["spec"]["renewTime"]);
}

TEST_F(ClientFakeServerTest, WatchDeliversEventsAndCancelsFromAnotherThread) {
  Json first = MustCreatePod("default", "p1");
  std::vector<std::string> seen;
  CancelToken cancel;
  std::mutex mutex;
  std::thread watcher([&] {
    Status ended = client_->Watch(
        kPods, {.ns = "default", .resource_version = ResourceVersionOf(first)},
        [&](const WatchEvent& event) {
          if (event.type == WatchEvent::Type::kBookmark) return true;
          std::lock_guard lock(mutex);
          seen.push_back(std::string(WatchEventTypeName(event.type)) + " " + NameOf(event.object));
          return true;
        },
        &cancel);
    EXPECT_TRUE(ended.ok()) << ended.ToString();
  });
  MustCreatePod("default", "p2");
  ASSERT_TRUE(client_->PatchLabels(kPods, "default", "p2", {{"x", "y"}}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "default", "p1").ok());
  EXPECT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mutex);
    return seen.size() >= 3;
  }));
  auto start = steady_clock::now();
  cancel.Cancel();
  watcher.join();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED p2", "MODIFIED p2", "DELETED p1"}));
}

TEST_F(ClientFakeServerTest, WatchFromAnExpiredVersionIsGone) {
  Json pod = MustCreatePod("default", "p1");
  MustCreatePod("default", "p2");
  server_->ExpireHistory();
  auto handler = [](const WatchEvent&) { return true; };
  Status status = client_->Watch(kPods, {.resource_version = ResourceVersionOf(pod)}, handler);
  EXPECT_TRUE(IsGone(status)) << status.ToString();
  server_->SetTooOldAsEvent(true);
  status = client_->Watch(kPods, {.resource_version = ResourceVersionOf(pod)}, handler);
  EXPECT_TRUE(IsGone(status)) << status.ToString();
  EXPECT_NE(status.message().find("ERROR event"), std::string::npos);
}

TEST_F(ClientFakeServerTest, TooManyRequestsHonoursRetryAfter) {
  server_->FailNext(2, 429, 1);
  auto start = steady_clock::now();
  Result<ObjectList> pods = client_->List(kPods, {});
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  // Two waits of Retry-After: 1 each.
  EXPECT_GE(steady_clock::now() - start, milliseconds(1900));
}

TEST_F(ClientFakeServerTest, TooManyRequestsGivesUpAfterTheRetryBudget) {
  auto limited = ClientFor(*server_, {.qps = 0, .max_retries = 1});
  server_->FailNext(3, 429, 1);
  Result<Json> pod = limited->Get(kPods, "default", "p1");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrorDetails(pod.status()).http_status, 429);
}

TEST_F(ClientFakeServerTest, RetriesStopAtTheCallTimeout) {
  auto bounded = ClientFor(*server_, {.qps = 0, .timeout = milliseconds(1500)});
  server_->FailNext(5, 429, 1);
  auto start = steady_clock::now();
  Result<Json> pod = bounded->Get(kPods, "default", "p1");
  EXPECT_EQ(pod.status().code(), StatusCode::kResourceExhausted) << pod.status().ToString();
  // One wait of 1 s fits in 1.5 s, a second does not; all five would take 5 s.
  EXPECT_LT(steady_clock::now() - start, milliseconds(4000));
  server_->FailNext(0, 429);
}

TEST_F(ClientFakeServerTest, ServerErrorWithoutRetryAfterIsNotRetried) {
  server_->FailNext(1, 500);
  Result<Json> pod = client_->Get(kPods, "default", "p1");
  EXPECT_EQ(pod.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ErrorDetails(pod.status()).http_status, 500);
}

TEST_F(ClientFakeServerTest, TimeoutIsDeadlineExceeded) {
  auto impatient = ClientFor(*server_, {.qps = 0, .timeout = milliseconds(200)});
  server_->SetLatency(milliseconds(1500));
  Result<ObjectList> pods = impatient->List(kPods, {});
  EXPECT_EQ(pods.status().code(), StatusCode::kDeadlineExceeded) << pods.status().ToString();
  server_->SetLatency(milliseconds(0));
}

TEST_F(ClientFakeServerTest, ConnectionsAreReused) {
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client_->List(kNodes, {}).ok());
  // cpp-httplib (the fake server) closes a keep-alive connection after 5 requests, so 20
  // requests need at least 4 connections; without reuse they would take 20.
  EXPECT_LE(client_->transport().connections_opened(), 5);
}

TEST_F(ClientFakeServerTest, ClientSideRateLimit) {
  auto slow = ClientFor(*server_, {.qps = 20, .burst = 2});
  auto start = steady_clock::now();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(slow->List(kNodes, {}).ok());
  // 2 free, then 6 more at 20/s: at least 300 ms.
  EXPECT_GE(steady_clock::now() - start, milliseconds(290));
}

TEST(ClientNetworkTest, NoServerIsUnavailable) {
  auto server = StartFakeServer();
  ASSERT_NE(server, nullptr);
  std::string url = server->url();
  auto client = Client::Create(ConnectionConfig{.server = url}, {.qps = 0});
  ASSERT_TRUE(client.ok());
  // One answered request first: FakeApiServer::Stop right after Start can hang (httplib's
  // listener may not be accepting yet when stop() is called).
  ASSERT_TRUE((*client)->List(kNodes, {}).ok());
  server->Stop();
  server.reset();
  Result<Json> pod = (*client)->Get(kPods, "default", "p1");
  EXPECT_EQ(pod.status().code(), StatusCode::kUnavailable) << pod.status().ToString();
  EXPECT_EQ(ErrorDetails(pod.status()).http_status, 0);
}

TEST(ClientNetworkTest, BearerTokenIsSent) {
  // The fake server accepts any token; this checks that a token file is read and a request with
  // it succeeds, and that a missing token file fails at creation with the file named.
  auto server = StartFakeServer();
  ASSERT_NE(server, nullptr);
  auto missing = Client::Create(ConnectionConfig{
      .server = server->url(), .token_file = "/nonexistent/token", .origin = "test"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/token"), std::string::npos);
  auto client = Client::Create(ConnectionConfig{.server = server->url(), .token = "abc"});
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->List(kNodes, {}).ok());
}

}  // namespace
}  // namespace tessera::kube
