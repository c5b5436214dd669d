// Who may read /inspect and /fit (read_access.h, kube_read_access.h), and what they show, with
// the scheduler wired to the fake API server's TokenReview and SubjectAccessReview.
#include "scheduler/read_access.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "config/loader.h"
#include "fakeapiserver/fake_api_server.h"
#include "kube/resource.h"
#include "scheduler/config_keys.h"
#include "scheduler/kube_read_access.h"
#include "scheduler/scheduler_app.h"
#include "scheduler/test_objects.h"
#include "scheduler/test_schema.h"

namespace tessera::scheduler {
namespace {

using testing::SchedulerSchema;

using json = nlohmann::json;
using tessera::testing::AccessReviews;
using tessera::testing::FakeApiServer;

TEST(BearerToken, TakesTheTokenOfABearerHeaderOnly) {
  EXPECT_EQ(BearerToken("Bearer abc.def"), "abc.def");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic YWJj", "Bearer a b", "Bearerabc"}) {
    EXPECT_FALSE(BearerToken(bad).has_value()) << bad;
  }
}

TEST(ReadAccessConfig, TokenByDefaultOpenOnlyWhenTheConfigSaysSo) {
  Result<config::Loaded> defaults = config::Load(SchedulerSchema(), {}, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(AppOptions::FromConfig(defaults->config).read_access, ReadAccess::kToken);
  EXPECT_EQ(AppOptions{}.read_access, ReadAccess::kToken);
  Result<config::Loaded> open =
      config::Load(SchedulerSchema(), {"--scheduler.read-access=open"}, {});
  ASSERT_TRUE(open.ok()) << open.status().message();
  EXPECT_EQ(AppOptions::FromConfig(open->config).read_access, ReadAccess::kOpen);
  Result<config::Loaded> env =
      config::Load(SchedulerSchema(), {}, {{"TESSERA_SCHEDULER_READ_ACCESS", "open"}});
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(AppOptions::FromConfig(env->config).read_access, ReadAccess::kOpen);
  Result<config::Loaded> bad =
      config::Load(SchedulerSchema(), {"--scheduler.read-access=none"}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("scheduler.read-access"), std::string::npos)
      << bad.status().message();
}

class ReadAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start({});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto client = kube::Client::Create({.server = server_->url()}, {.qps = 0});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    AccessReviews& reviews = server_->access_reviews();
    reviews.AddToken("t-alice", {.name = "alice", .uid = "u-1", .groups = {"gpu-viewers"}});
    reviews.AddToken("t-bob", {.name = "bob"});
    reviews.AddToken("t-fitter", {.name = "fitter"});
    reviews.Allow("group:gpu-viewers", "get", "tessera.io", "scheduler/inspect");
    reviews.Allow("fitter", "get", "tessera.io", "scheduler/inspect");
    reviews.Allow("fitter", "create", "tessera.io", "scheduler/fit");
  }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(ReadAccessTest, ATokenIsReviewedThenTheUserAuthorisedForTheAction) {
  KubeReadAuthorizer auth(*client_);
  AccessVerdict v = auth.Check("", kReadInspect);
  EXPECT_EQ(v.status, 401);
  EXPECT_NE(v.error.find("no Authorization header"), std::string::npos) << v.error;
  EXPECT_NE(v.error.find("get tessera.io scheduler/inspect"), std::string::npos) << v.error;
  EXPECT_EQ(auth.Check("Basic YWxpY2U6cHc=", kReadInspect).status, 401);
  v = auth.Check("Bearer stolen", kReadInspect);
  EXPECT_EQ(v.status, 401);
  EXPECT_NE(v.error.find("invalid bearer token"), std::string::npos) << v.error;

  v = auth.Check("Bearer t-bob", kReadInspect);
  EXPECT_EQ(v.status, 403);
  EXPECT_EQ(v.user, "bob");
  EXPECT_NE(v.error.find("user \"bob\" may not get tessera.io scheduler/inspect"),
            std::string::npos)
      << v.error;
  // Through a group.
  v = auth.Check("Bearer t-alice", kReadInspect);
  EXPECT_EQ(v.status, 200) << v.error;
  EXPECT_EQ(v.user, "alice");
  EXPECT_EQ(auth.Check("Bearer t-alice", kRunFit).status, 403);
  EXPECT_EQ(auth.Check("Bearer t-fitter", kRunFit).status, 200);
}

TEST_F(ReadAccessTest, AnswersAreCachedForTheTtlAndFailuresAreNot) {
  auto now = std::chrono::steady_clock::now();
  KubeReadAuthorizer auth(*client_, std::chrono::seconds(10), [&] { return now; });
  AccessReviews& reviews = server_->access_reviews();
  ASSERT_EQ(auth.Check("Bearer t-alice", kReadInspect).status, 200);
  ASSERT_EQ(auth.Check("Bearer stolen", kReadInspect).status, 401);
  const size_t asked = reviews.answered();
  EXPECT_EQ(asked, 3u);  // two token reviews, one access review
  now += std::chrono::seconds(9);
  EXPECT_EQ(auth.Check("Bearer t-alice", kReadInspect).status, 200);
  EXPECT_EQ(auth.Check("Bearer stolen", kReadInspect).status, 401);
  EXPECT_EQ(reviews.answered(), asked);
  now += std::chrono::seconds(2);
  EXPECT_EQ(auth.Check("Bearer t-alice", kReadInspect).status, 200);
  EXPECT_EQ(reviews.answered(), asked + 2);

  // The API server fails: refused with 503, nothing let through, and asked again next time.
  server_->FailNext(100, 500);
  AccessVerdict v = auth.Check("Bearer t-fitter", kReadInspect);
  EXPECT_EQ(v.status, 503);
  EXPECT_NE(v.error.find("the TokenReview failed"), std::string::npos) << v.error;
  server_->FailNext(0, 500);
  EXPECT_EQ(auth.Check("Bearer t-fitter", kReadInspect).status, 200);
}

// Unknown tokens cost the scheduler's own API calls: a client sending new ones is held to a rate.
TEST_F(ReadAccessTest, NewTokensAreReviewedAtALimitedRateCachedOnesAlways) {
  auto now = std::chrono::steady_clock::now();
  KubeReadAuthorizer auth(
      *client_, std::chrono::seconds(10), [&] { return now; }, 4096, 2);
  EXPECT_EQ(auth.Check("Bearer t-alice", kReadInspect).status, 200);
  EXPECT_EQ(auth.Check("Bearer guess-1", kReadInspect).status, 401);
  AccessVerdict v = auth.Check("Bearer guess-2", kReadInspect);
  EXPECT_EQ(v.status, 429);
  EXPECT_NE(v.error.find("at most 2 a second"), std::string::npos) << v.error;
  EXPECT_EQ(auth.Check("Bearer t-alice", kReadInspect).status, 200);  // cached
  now += std::chrono::seconds(1);
  EXPECT_EQ(auth.Check("Bearer t-fitter", kRunFit).status, 200);
}

class ReadAccessE2E : public ReadAccessTest {
 protected:
  void StartApp(ReadAccess access) {
    AppOptions options;
    options.server.listen = "127.0.0.1:0";
    options.server.ui = true;
    options.read_access = access;
    app_ = std::make_unique<SchedulerApp>(*client_, options);
    ASSERT_TRUE(app_->Start().ok());
    ASSERT_TRUE(app_->WaitForSync(std::chrono::seconds(30)));
    http_ = std::make_unique<httplib::Client>("127.0.0.1", app_->port());
  }
  void TearDown() override {
    http_.reset();
    app_.reset();
  }
  template <typename F>
  static bool WaitFor(F done) {
    for (int i = 0; i < 3000 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }
  json Create(const kube::Resource& resource, const std::string& ns, json object) {
    object["metadata"].erase("uid");
    Result<json> created = client_->Create(resource, ns, object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }
  json Inspect() {
    httplib::Result r = http_->Get("/inspect", {{"Authorization", "Bearer t-alice"}});
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return r && r->status == 200 ? json::parse(r->body) : json();
  }

  std::unique_ptr<SchedulerApp> app_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(ReadAccessE2E, InspectAndFitNeedAnAllowedTokenThePageFilesDoNot) {
  StartApp(ReadAccess::kToken);
  httplib::Result r = http_->Get("/inspect");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer realm=\"tessera-scheduler\"");
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("no Authorization header"),
            std::string::npos);
  r = http_->Get("/inspect", {{"Authorization", "Bearer t-bob"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_FALSE(Inspect().is_null());
  // Through pods/proxy the API server removes Authorization; the page's header carries the token.
  r = http_->Get("/inspect", {{"X-Tessera-Authorization", "Bearer t-alice"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = http_->Get("/inspect", {{"X-Tessera-Authorization", "Bearer t-bob"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);

  const std::string body = R"j({"resources": {"nvidia.com/gpu": 1}})j";
  r = http_->Post("/fit", {{"Authorization", "Bearer t-alice"}}, body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("may not create tessera.io scheduler/fit"), std::string::npos) << r->body;
  r = http_->Post("/fit", {{"Authorization", "Bearer t-fitter"}}, body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["fits"], false);  // no GPU node yet
  r = http_->Post("/fit", {{"Authorization", "Bearer t-fitter"}}, "{", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);

  // The page's own files hold no data.
  r = http_->Get("/ui/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Health and metrics stay open.
  EXPECT_EQ(http_->Get("/healthz")->status, 200);
}

TEST_F(ReadAccessE2E, OpenAccessAsksNothing) {
  StartApp(ReadAccess::kOpen);
  EXPECT_EQ(http_->Get("/inspect")->status, 200);
  httplib::Result r = http_->Post("/fit", R"j({"claim": {"count": 1}})j", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(server_->access_reviews().answered(), 0u);
}

// A pending pod carries the scheduler's last filter reasons until it is bound; a claim allocated
// on a GPU shows as a DRA share; the dry run places what bind then places.
TEST_F(ReadAccessE2E, InspectShowsWhyAPodWaitsAndTheDraShares) {
  StartApp(ReadAccess::kToken);
  Create(kube::kNodes, "", testing::MakeUniformNode("gpu-a", 2, "A100", 40960));
  json pod = Create(kube::kPods, "default",
                    testing::MakePod("big", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 50000}}));
  json small =
      Create(kube::kPods, "default",
             testing::MakePod("small", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 8000}}));
  PodId big_id{"default", "big", pod["metadata"]["uid"]};
  PodId small_id{"default", "small", small["metadata"]["uid"]};
  ASSERT_TRUE(WaitFor([&] {
    return app_->state().Pending(big_id) && app_->state().Pending(small_id) &&
           app_->state().NodeCount() == 1;
  }));

  // kube-scheduler filters both.
  for (const json& p : {pod, small}) {
    json args = {{"Pod", p}, {"NodeNames", {"gpu-a", "cpu-1"}}};
    httplib::Result r = http_->Post("/filter", args.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200);
  }
  json inspect = Inspect();
  ASSERT_EQ(inspect["pending"].size(), 2u);
  json filter = inspect["pending"][0]["filter"];
  EXPECT_EQ(inspect["pending"][0]["pod"], "default/big");
  EXPECT_EQ(filter["nodesChecked"], 2);
  EXPECT_EQ(filter["fits"], json::array());
  EXPECT_EQ(filter["reasons"], json::parse(R"j([
    {"node":"cpu-1","reason":"node has no Tessera GPU inventory (never seen)","unresolvable":true},
    {"node":"gpu-a","reason":"insufficient GPU memory: need 50000 MiB on 1 GPU, largest free 40960 MiB (GPU 0, A100)","unresolvable":true}])j"));
  EXPECT_EQ(inspect["pending"][1]["filter"]["fits"], json::array({"gpu-a"}));

  // What /fit says for the small pod's request is what bind gives it.
  httplib::Result fit = http_->Post(
      "/fit", {{"Authorization", "Bearer t-fitter"}},
      R"j({"resources": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000}})j", "application/json");
  ASSERT_TRUE(fit && fit->status == 200);
  json answer = json::parse(fit->body);
  ASSERT_EQ(answer["node"], "gpu-a");
  json bind = {{"PodName", "small"}, {"PodNamespace", "default"}, {"Node", "gpu-a"}};
  httplib::Result bound = http_->Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(bound && bound->status == 200);
  ASSERT_EQ(json::parse(bound->body)["Error"], "") << bound->body;
  ASSERT_TRUE(WaitFor([&] { return !app_->state().Pending(small_id); }));
  inspect = Inspect();
  ASSERT_EQ(inspect["allocations"].size(), 1u);
  EXPECT_EQ(inspect["allocations"][0]["allocation"]["containers"][0]["devices"][0]["uuid"],
            answer["gpus"][0]["uuid"]);
  // Bound: its filter is forgotten, the waiting pod's stays.
  ASSERT_EQ(inspect["pending"].size(), 1u);
  EXPECT_TRUE(inspect["pending"][0].contains("filter"));

  // A DRA claim allocated on gpu-a's second GPU.
  json claim = Create(kube::kResourceClaims, "default",
                      {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaim"},
                       {"metadata", {{"name", "shared"}, {"namespace", "default"}}},
                       {"spec", {{"devices", {{"requests", json::array()}}}}}});
  json status = {{"allocation",
                  {{"devices",
                    {{"results",
                      {{{"request", "gpu"},
                        {"driver", "gpu.tessera.io"},
                        {"pool", "gpu-a"},
                        {"device", "gpu-1"},
                        {"consumedCapacity", {{"memory", "4Gi"}, {"cores", "25"}}}}}}}}}},
                 {"reservedFor", {{{"resource", "pods"}, {"name", "reader"}, {"uid", "r-1"}}}}};
  ASSERT_TRUE(
      client_
          ->MergePatch(kube::kResourceClaims, "default", "shared", {{"status", status}}, "status")
          .ok());
  ASSERT_TRUE(WaitFor([&] { return Inspect()["draShares"].size() == 1; }));
  EXPECT_EQ(Inspect()["draShares"][0],
            json::parse(R"j({"claim":"default/shared","uid":")j" +
                        claim["metadata"]["uid"].get<std::string>() +
                        R"j(","node":"gpu-a","device":"gpu-1","gpuIndex":1,"gpuUuid":"gpu-a-gpu1",
                        "memoryMiB":4096,"wholeMemory":false,"cores":25,
                        "pods":["default/reader"],"dra":true})j"));
}

}  // namespace
}  // namespace tessera::scheduler
