#include "node/metrics/metrics_server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "http/test_connections.h"

namespace tessera::node {
namespace {

TEST(MetricsServerTest, ServesTheRenderedText) {
  MetricsServer server([] { return std::string("tessera_gpu_healthy{gpu=\"GPU-0\"} 1\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(10);
  client.set_read_timeout(10);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "tessera_gpu_healthy{gpu=\"GPU-0\"} 1\n");
  server.Stop();
  EXPECT_FALSE(MetricsServer([] { return std::string(); }).Start("nonsense").ok());
}

TEST(MetricsServerTest, ReadyzSaysWhyItIsNotReady) {
  std::atomic<bool> registered{false};
  MetricsServer server([] { return std::string(); },
                       [&registered] {
                         return registered ? std::string()
                                           : std::string("the device plugins are not registered");
                       });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(10);
  client.set_read_timeout(10);
  auto res = client.Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "not ready: the device plugins are not registered\n");
  auto live = client.Get("/healthz");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);  // alive while not ready
  registered = true;
  res = client.Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok\n");
  server.Stop();
}

// cpp-httplib's own pool of 8 threads was held by 8 idle connections: Prometheus and the liveness
// probe then waited for them.
TEST(MetricsServerTest, SixtyFourIdleAndSixtyFourSlowConnectionsLeaveItAnswering) {
  using std::chrono::milliseconds;
  MetricsServer server([] { return std::string("tessera_up 1\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::vector<int> idle, slow;
  for (int i = 0; i < 64; ++i) idle.push_back(http::testing::Connect(server.port()));
  for (int i = 0; i < 64; ++i) slow.push_back(http::testing::Connect(server.port()));
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    http::testing::DripFeed(slow, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaa",
                            milliseconds(200), stop);
  });
  std::this_thread::sleep_for(milliseconds(300));  // every connection accepted and waiting
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(1, 0);
  for (const char* path : {"/healthz", "/metrics", "/healthz", "/metrics"}) {
    auto start = std::chrono::steady_clock::now();
    auto res = client.Get(path);
    auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
    ASSERT_TRUE(res) << path << " did not answer: " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_LT(took.count(), 100) << path << " took " << took.count() << " ms";
  }
  stop.store(true);
  feeder.join();
  for (int fd : idle) close(fd);
  for (int fd : slow) close(fd);
  server.Stop();
}

}  // namespace
}  // namespace tessera::node
