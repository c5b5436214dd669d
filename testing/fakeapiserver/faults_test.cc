// Fault injection through the /fake control endpoints and the C++ methods.
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using std::chrono::milliseconds;

TEST_F(FakeApiServerTest, FailNextCountsRequestsAndCarriesRetryAfter) {
  HttpAnswer set = client_->Post("/fake/fail?count=2&status=429&retryAfter=3", std::string());
  ASSERT_EQ(set.status, 200) << set.body.dump();
  for (int i = 0; i < 2; ++i) {
    HttpAnswer a = client_->Get("/api/v1/pods");
    EXPECT_EQ(a.status, 429);
    EXPECT_EQ(a.body["reason"], "TooManyRequests");
    EXPECT_EQ(a.body["details"]["retryAfterSeconds"], 3);
    EXPECT_EQ(a.retry_after, "3");
  }
  EXPECT_EQ(client_->Get("/api/v1/pods").status, 200);
}

TEST_F(FakeApiServerTest, FailNextWithServerErrorAppliesToWritesToo) {
  server_->FailNext(1, 500);
  HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", PodJson("p1"));
  EXPECT_EQ(a.status, 500);
  EXPECT_EQ(a.body["reason"], "InternalError");
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/p1").status, 404);
  EXPECT_EQ(client_->Post("/api/v1/namespaces/default/pods", PodJson("p1")).status, 201);
}

TEST_F(FakeApiServerTest, ControlEndpointsAreNotFailedThemselves) {
  server_->FailNext(5, 503);
  EXPECT_EQ(client_->Post("/fake/fail?count=0&status=500", std::string()).status, 200);
  EXPECT_EQ(client_->Get("/api/v1/pods").status, 200);
}

TEST_F(FakeApiServerTest, ControlEndpointRejectsBadParameters) {
  EXPECT_EQ(client_->Post("/fake/fail?count=x", std::string()).status, 400);
  EXPECT_EQ(client_->Post("/fake/fail?status=200", std::string()).status, 400);
  EXPECT_EQ(client_->Post("/fake/latency?ms=-5", std::string()).status, 400);
}

TEST_F(FakeApiServerTest, LatencyDelaysEveryRequest) {
  ASSERT_EQ(client_->Post("/fake/latency?ms=200", std::string()).status, 200);
  auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(client_->Get("/api/v1/pods").status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - begin, milliseconds(200));
  server_->SetLatency(milliseconds(0));
}

}  // namespace
}  // namespace tessera::testing
