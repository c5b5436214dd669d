// The HTTP server under hostile connections: idle ones, ones that send a request a byte at a
// time, more connections than the limit, and TLS clients that never finish the handshake. Each
// test is named after the attack it stops.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "http/test_connections.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/fake_binder.h"
#include "scheduler/http_server.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using http::testing::Connect;
using http::testing::DripFeed;
using std::chrono::milliseconds;

class Served {
 public:
  explicit Served(ServerOptions options)
      : engine_(state_, binder_, {}, &metrics_),
        extender_(engine_, state_, metrics_),
        webhook_(state_, "tessera"),
        server_(std::move(options), extender_, webhook_, state_, metrics_) {
    Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s.message();
    server_.SetReady(true);
  }
  int port() const { return server_.port(); }

 private:
  ClusterState state_{DialectConfig{}};
  Metrics metrics_;
  testing::FakeBinder binder_;
  Engine engine_;
  Extender extender_;
  Webhook webhook_;
  HttpServer server_;
};

ServerOptions Plain(http::ConnectionLimits limits = {}) {
  return {.listen = "127.0.0.1:0", .limits = limits};
}

// True when the server closed `fd` (or reset it) within `within`.
bool ClosedWithin(int fd, milliseconds within) {
  Clock::time_point end = Clock::now() + within;
  char buf[512];
  while (Clock::now() < end) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 20) == 1) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return true;
    }
  }
  return false;
}

json FilterArgs() {
  return {{"Pod", testing::MakePod("p", {{"nvidia.com/gpumem", 1024}})},
          {"Nodes", nullptr},
          {"NodeNames", {"n"}}};
}

// Sends /healthz, /filter and /validate on fresh connections; every one must answer 200 within
// 100 ms.
template <typename ClientT>
void ExpectEveryEndpointAnswersQuickly(ClientT& client) {
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(1, 0);
  for (int round = 0; round < 3; ++round) {
    struct Call {
      const char* path;
      std::string body;
    };
    for (const Call& c :
         {Call{"/healthz", ""}, Call{"/filter", FilterArgs().dump()},
          Call{"/validate",
               testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 1024}})).dump()}}) {
      Clock::time_point start = Clock::now();
      httplib::Result r =
          c.body.empty() ? client.Get(c.path) : client.Post(c.path, c.body, "application/json");
      auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
      ASSERT_TRUE(r) << c.path << " did not answer: " << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 200) << c.path;
      EXPECT_LT(took.count(), 100) << c.path << " took " << took.count() << " ms";
    }
  }
}

const std::string kSlowRequest =
    "POST /filter HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

TEST(HttpConnections, SixtyFourIdleAndSixtyFourSlowConnectionsLeaveEveryEndpointAnswering) {
  Served served(Plain());
  std::vector<int> idle, slow;
  for (int i = 0; i < 64; ++i) idle.push_back(Connect(served.port()));
  for (int i = 0; i < 64; ++i) slow.push_back(Connect(served.port()));
  std::atomic<bool> stop{false};
  std::thread feeder([&] { DripFeed(slow, kSlowRequest, milliseconds(200), stop); });
  std::this_thread::sleep_for(milliseconds(300));  // every connection accepted and waiting

  httplib::Client client("127.0.0.1", served.port());
  ExpectEveryEndpointAnswersQuickly(client);

  stop.store(true);
  feeder.join();
  for (int fd : idle) close(fd);
  for (int fd : slow) close(fd);
}

TEST(HttpConnections, SlowlorisHeaderSenderIsCutOffAtTheRequestDeadline) {
  // httplib's read timeout applied to each read: a byte every 50 ms kept a connection forever.
  Served served(Plain({.request_timeout = milliseconds(300)}));
  std::vector<int> fds = {Connect(served.port())};
  std::atomic<bool> stop{false};
  std::thread feeder([&] { DripFeed(fds, kSlowRequest, milliseconds(50), stop); });
  EXPECT_TRUE(ClosedWithin(fds[0], milliseconds(1500)));
  stop.store(true);
  feeder.join();
  close(fds[0]);
}

TEST(HttpConnections, SlowBodySenderIsCutOffAtTheRequestDeadline) {
  Served served(Plain({.request_timeout = milliseconds(300)}));
  int fd = Connect(served.port());
  std::string head =
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000\r\n\r\n{";
  ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::vector<int> fds = {fd};
  std::atomic<bool> stop{false};
  std::thread feeder([&] { DripFeed(fds, " ", milliseconds(50), stop); });
  EXPECT_TRUE(ClosedWithin(fd, milliseconds(1500)));
  stop.store(true);
  feeder.join();
  close(fd);
}

TEST(HttpConnections, IdleConnectionIsClosedAfterTheIdleTimeout) {
  Served served(Plain({.idle_timeout = milliseconds(200)}));
  int fd = Connect(served.port());
  EXPECT_TRUE(ClosedWithin(fd, milliseconds(1500)));
  close(fd);
}

TEST(HttpConnections, ConnectionsOverTheLimitAreAnswered503NotQueued) {
  Served served(Plain({.max_connections = 16}));
  std::vector<int> held;
  for (int i = 0; i < 16; ++i) held.push_back(Connect(served.port()));
  std::this_thread::sleep_for(milliseconds(200));
  int extra = Connect(served.port());
  pollfd p{.fd = extra, .events = POLLIN, .revents = 0};
  ASSERT_EQ(poll(&p, 1, 1000), 1) << "the connection over the limit waited instead";
  char buf[128] = {};
  ASSERT_GT(recv(extra, buf, sizeof buf - 1, 0), 0);
  EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 503", 0), 0u) << buf;
  close(extra);
  for (int fd : held) close(fd);
  // Once the held connections are gone, the server answers again.
  httplib::Client client("127.0.0.1", served.port());
  client.set_read_timeout(1, 0);
  for (int tries = 0; tries < 50; ++tries) {
    httplib::Result r = client.Get("/healthz");
    if (r && r->status == 200) return;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ADD_FAILURE() << "/healthz never answered after the held connections closed";
}

TEST(HttpConnections, KeptAliveConnectionServesManyRequests) {
  Served served(Plain());
  httplib::Client client("127.0.0.1", served.port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // else the client's own Nagle delays each body ~40 ms
  for (int i = 0; i < 20; ++i) {
    httplib::Result r = client.Post("/filter", FilterArgs().dump(), "application/json");
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
  }
}

namespace fs = std::filesystem;

class HttpsConnections : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-https-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
        (dir_ / "tls.key").string() + "' -out '" + (dir_ / "tls.crt").string() + "' > '" +
        (dir_ / "openssl.log").string() + "' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl failed; see " << dir_;
  }
  void TearDown() override { fs::remove_all(dir_); }
  ServerOptions Tls() {
    return {.listen = "127.0.0.1:0",
            .tls_cert = (dir_ / "tls.crt").string(),
            .tls_key = (dir_ / "tls.key").string()};
  }
  fs::path dir_;
};

TEST_F(HttpsConnections, ClientsThatNeverFinishTheHandshakeLeaveHttpsAnswering) {
  Served served(Tls());
  std::vector<int> stalled, slow;
  for (int i = 0; i < 64; ++i) stalled.push_back(Connect(served.port()));
  for (int i = 0; i < 64; ++i) slow.push_back(Connect(served.port()));
  // A ClientHello's first bytes, a byte at a time.
  const std::string hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  std::atomic<bool> stop{false};
  std::thread feeder([&] { DripFeed(slow, hello, milliseconds(200), stop); });
  std::this_thread::sleep_for(milliseconds(300));

  httplib::SSLClient client("127.0.0.1", served.port());
  client.set_ca_cert_path((dir_ / "tls.crt").string());
  client.enable_server_certificate_verification(true);
  ExpectEveryEndpointAnswersQuickly(client);

  stop.store(true);
  feeder.join();
  for (int fd : stalled) close(fd);
  for (int fd : slow) close(fd);
}

TEST_F(HttpsConnections, BadCertificateFilesAreRefusedAtStart) {
  std::ofstream(dir_ / "bad.crt") << "not a certificate\n";
  ClusterState state{DialectConfig{}};
  Metrics metrics;
  testing::FakeBinder binder;
  Engine engine(state, binder, {}, &metrics);
  Extender extender(engine, state, metrics);
  Webhook webhook(state, "tessera");
  ServerOptions options = Tls();
  options.tls_cert = (dir_ / "bad.crt").string();
  HttpServer server(options, extender, webhook, state, metrics);
  Status s = server.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bad.crt"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera::scheduler
