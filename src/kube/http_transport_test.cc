// Transport and Client details against a scripted HTTP server: headers sent, watch lines split
// across chunks, retries of a 5xx that carries Retry-After.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "kube/client.h"

namespace tessera::kube {
namespace {

class ScriptedServer {
 public:
  ScriptedServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~ScriptedServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& http() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

std::unique_ptr<Client> ClientOf(const ScriptedServer& server, const std::string& token = "") {
  auto client = Client::Create({.server = server.url(), .token = token}, {.qps = 0});
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

TEST(HttpTransportTest, SendsBearerTokenAndUserAgent) {
  ScriptedServer server;
  std::string authorization, agent;
  server.http().Get("/api/v1/nodes/n1", [&](const httplib::Request& req, httplib::Response& res) {
    authorization = req.get_header_value("Authorization");
    agent = req.get_header_value("User-Agent");
    res.set_content(R"({"metadata":{"name":"n1"}})", "application/json");
  });
  auto client = ClientOf(server, "s3cret");
  Result<Json> node = client->Get(kNodes, "", "n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(NameOf(*node), "n1");
  EXPECT_EQ(authorization, "Bearer s3cret");
  EXPECT_EQ(agent, "tessera");
}

TEST(HttpTransportTest, WatchLinesSplitAcrossChunks) {
  ScriptedServer server;
  server.http().Get("/api/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("watch"), "1");
    EXPECT_EQ(req.get_param_value("resourceVersion"), "7");
    EXPECT_EQ(req.get_param_value("allowWatchBookmarks"), "true");
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      for (const char* piece :
           {R"({"type":"ADDED","object":{"metadata":{"name":"a")", "}}}\r\n{\"type\":\"MODIF",
            R"(IED","object":{"metadata":{"name":"a","resourceVersion":"8"}}})"
            "\n\n",
            R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"
            "\n",
            R"({"type":"DELETED","object":{"metadata":{"name":"a"}}})"}) {
        sink.write(piece, strlen(piece));
      }
      sink.done();
      return true;
    });
  });
  auto client = ClientOf(server);
  std::vector<std::string> seen;
  Status status = client->Watch(kPods, {.resource_version = "7"}, [&](const WatchEvent& event) {
    seen.push_back(std::string(WatchEventTypeName(event.type)) + " " +
                   ResourceVersionOf(event.object));
    return true;
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED ", "MODIFIED 8", "BOOKMARK 9", "DELETED "}));
}

TEST(HttpTransportTest, MalformedWatchLineEndsTheWatchWithAnError) {
  ScriptedServer server;
  server.http().Get("/api/v1/pods", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"type\":\"ADDED\",\"object\":{}}\nnot json\n", "application/json");
  });
  auto client = ClientOf(server);
  int events = 0;
  Status status = client->Watch(kPods, {}, [&](const WatchEvent&) { return ++events > 0; });
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("not json"), std::string::npos);
  EXPECT_EQ(events, 1);
}

TEST(HttpTransportTest, ServerErrorWithRetryAfterIsRetried) {
  ScriptedServer server;
  std::atomic<int> calls{0};
  server.http().Get("/api/v1/nodes/n1", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 503;
      res.set_header("Retry-After", "0");
      res.set_content(R"({"kind":"Status","code":503,"reason":"ServiceUnavailable",
                          "message":"starting"})",
                      "application/json");
      return;
    }
    res.set_content(R"({"metadata":{"name":"n1"}})", "application/json");
  });
  auto client = ClientOf(server);
  Result<Json> node = client->Get(kNodes, "", "n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(calls, 2);
}

TEST(HttpTransportTest, NonJsonSuccessIsAnError) {
  ScriptedServer server;
  server.http().Get("/api/v1/nodes/n1", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>proxy</html>", "text/html");
  });
  Result<Json> node = ClientOf(server)->Get(kNodes, "", "n1");
  EXPECT_EQ(node.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(node.status().message().find("not JSON"), std::string::npos);
}

}  // namespace
}  // namespace tessera::kube
