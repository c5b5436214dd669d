// pods/proxy: a request reaches the pod's IP and port and its answer comes back; the client's
// Authorization stays behind; a missing pod is 404, a pod without an IP or that does not answer
// is 503.
#include <httplib.h>

#include <thread>

#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// A pod's server on 127.0.0.1: echoes what it received.
class PodServer {
 public:
  PodServer() {
    auto echo = [](const httplib::Request& req, httplib::Response& res) {
      res.status = req.path == "/missing" ? 404 : 200;
      res.set_header("ETag", "\"e1\"");
      res.set_content(json{{"method", req.method},
                           {"path", req.path},
                           {"query", req.get_param_value("a")},
                           {"auth", req.get_header_value("Authorization")},
                           {"x", req.get_header_value("X-Tessera-Authorization")},
                           {"body", req.body}}
                          .dump(),
                      "application/json");
    };
    server_.Get(".*", echo);
    server_.Post(".*", echo);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~PodServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

class PodProxyTest : public FakeApiServerTest {
 protected:
  void CreatePodAt(const std::string& name, const std::string& ip) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}},
                {"status", {{"phase", "Running"}}}};
    if (!ip.empty()) pod["status"]["podIP"] = ip;
    ASSERT_EQ(client_->Post("/api/v1/namespaces/default/pods", pod).status, 201);
  }
  httplib::Client Http() { return httplib::Client("127.0.0.1", server_->port()); }
};

TEST_F(PodProxyTest, PassesTheRequestToThePodAndItsAnswerBack) {
  PodServer pod;
  CreatePodAt("web", "127.0.0.1");
  const std::string base =
      "/api/v1/namespaces/default/pods/http:web:" + std::to_string(pod.port()) + "/proxy";
  httplib::Client c = Http();
  auto got = c.Get(base + "/ui/app.mjs?a=1",
                   {{"Authorization", "Bearer user"}, {"X-Tessera-Authorization", "Bearer page"}});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->get_header_value("ETag"), "\"e1\"");
  EXPECT_EQ(got->get_header_value("Content-Type"), "application/json");
  json echo = json::parse(got->body);
  EXPECT_EQ(echo["method"], "GET");
  EXPECT_EQ(echo["path"], "/ui/app.mjs");
  EXPECT_EQ(echo["query"], "1");
  EXPECT_EQ(echo["auth"], "") << "the API server keeps Authorization";
  EXPECT_EQ(echo["x"], "Bearer page");

  auto posted = c.Post(base + "/fit", R"({"claim":{}})", "application/json");
  ASSERT_TRUE(posted);
  EXPECT_EQ(json::parse(posted->body)["body"], R"({"claim":{}})");
  // The pod's own 404 comes back as it is.
  auto missing = c.Get(base + "/missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["path"], "/missing");
}

TEST_F(PodProxyTest, MissingPodsPodsWithoutAnIpAndSilentPodsAreErrors) {
  httplib::Client c = Http();
  auto missing = c.Get("/api/v1/namespaces/default/pods/nobody/proxy/");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["reason"], "NotFound");

  CreatePodAt("pending", "");
  auto no_ip = c.Get("/api/v1/namespaces/default/pods/pending/proxy/");
  ASSERT_TRUE(no_ip);
  EXPECT_EQ(no_ip->status, 503);
  EXPECT_EQ(json::parse(no_ip->body)["message"], "pod default/pending has no IP address");

  int closed = 0;
  {
    PodServer gone;
    closed = gone.port();
  }
  CreatePodAt("silent", "127.0.0.1");
  auto silent = c.Get("/api/v1/namespaces/default/pods/https:silent:" + std::to_string(closed) +
                      "/proxy/inspect");
  ASSERT_TRUE(silent);
  EXPECT_EQ(silent->status, 503);
  EXPECT_EQ(json::parse(silent->body)["message"].get<std::string>().rfind(
                "error trying to reach service: ", 0),
            0u)
      << silent->body;

  auto bad_port = c.Get("/api/v1/namespaces/default/pods/silent:http/proxy/");
  ASSERT_TRUE(bad_port);
  EXPECT_EQ(bad_port->status, 400);
}

}  // namespace
}  // namespace tessera::testing
