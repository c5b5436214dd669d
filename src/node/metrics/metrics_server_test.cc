#include "node/metrics/metrics_server.h"

#include <httplib.h>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tessera::node
