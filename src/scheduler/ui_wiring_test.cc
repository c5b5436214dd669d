// The web page on the scheduler's port: served under /ui/ only with scheduler.ui.enabled (off by
// default), with the same answers as src/ui's handler, beside /inspect, which it reads.
#include <httplib.h>

#include <gtest/gtest.h>

#include "config/loader.h"
#include "scheduler/config_keys.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/fake_binder.h"
#include "scheduler/http_server.h"
#include "scheduler/scheduler_app.h"
#include "scheduler/test_objects.h"
#include "scheduler/test_schema.h"
#include "scheduler/webhook.h"
#include "ui/ui_handler.h"

namespace tessera::scheduler {
namespace {

using testing::SchedulerSchema;

// A scheduler's HTTP server on a free port, with or without the page.
class Server {
 public:
  explicit Server(bool ui)
      : state_(DialectConfig{}),
        engine_(state_, binder_, {}, &metrics_),
        extender_(engine_, state_, metrics_),
        webhook_(state_, "tessera"),
        server_({.listen = "127.0.0.1:0", .ui = ui}, extender_, webhook_, state_, metrics_) {
    Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  httplib::Client Client() { return httplib::Client("127.0.0.1", server_.port()); }
  void AddNode(const nlohmann::json& node) {
    ASSERT_TRUE(state_.OnNode(EventType::kAdded, node).ok());
  }

 private:
  ClusterState state_;
  testing::FakeBinder binder_;
  Metrics metrics_;
  Engine engine_;
  Extender extender_;
  Webhook webhook_;
  HttpServer server_;
};

TEST(SchedulerUi, ServesNothingUnderUiWhenTheKeyIsOff) {
  Server server(/*ui=*/false);
  httplib::Client c = server.Client();
  for (const char* path : {"/ui/", "/ui", "/ui/index.html", "/ui/app.mjs", "/ui/style.css"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(r->get_header_value("Content-Security-Policy"), "") << path;
    EXPECT_NE(r->body.find("no such endpoint"), std::string::npos) << path << ": " << r->body;
  }
  auto inspect = c.Get("/inspect");
  ASSERT_TRUE(inspect);
  EXPECT_EQ(inspect->status, 200);
}

TEST(SchedulerUi, ServesThePageBesideInspectWhenTheKeyIsOn) {
  Server server(/*ui=*/true);
  httplib::Client c = server.Client();
  auto page = c.Get("/ui/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("Content-Security-Policy"), ui::kContentSecurityPolicy);
  EXPECT_NE(page->body.find("app.mjs"), std::string::npos);
  ui::UiResponse expected = ui::ServeUi("app.mjs", "");
  auto js = c.Get("/ui/app.mjs");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, expected.body);
  const std::string etag = js->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = c.Get("/ui/app.mjs", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  // An unknown file is the scheduler's 404, still with the page's security headers.
  auto missing = c.Get("/ui/missing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("Content-Security-Policy"), ui::kContentSecurityPolicy);
  // The page's files are compressed for a browser (by httplib: they are small).
  auto compressed = c.Get("/ui/model.mjs", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(compressed);
  EXPECT_EQ(compressed->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(compressed->body, ui::ServeUi("model.mjs", "").body);
}

// What the page polls: /inspect of a 20-node cluster (about 20 KB) is gzip-compressed for a client
// that accepts gzip, whatever else it offers, and never with brotli (compressed_json.h: 21 s of
// CPU for 1,000 nodes); a client that accepts no gzip gets it plain.
TEST(SchedulerUi, InspectIsCompressedWithGzipNeverBrotli) {
  Server server(/*ui=*/true);
  for (int n = 0; n < 20; ++n) {
    server.AddNode(testing::MakeUniformNode("node-" + std::to_string(n), 8, "A100", 81920));
  }
  httplib::Client c = server.Client();
  auto plain = c.Get("/inspect");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(plain->get_header_value("Content-Type"), "application/json; charset=utf-8");
  EXPECT_EQ(nlohmann::json::parse(plain->body)["nodes"].size(), 20u);
  EXPECT_GT(plain->body.size(), 10000u);
  for (const char* accepted : {"gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "GZIP"}) {
    auto r = c.Get("/inspect", {{"Accept-Encoding", accepted}});
    ASSERT_TRUE(r) << accepted;
    EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip") << accepted;
    EXPECT_EQ(r->get_header_value("Vary"), "Accept-Encoding") << accepted;
    EXPECT_EQ(r->body, plain->body) << accepted;  // as the client decompressed it
  }
  for (const char* refused : {"br", "gzip;q=0", "identity"}) {
    auto r = c.Get("/inspect", {{"Accept-Encoding", refused}});
    ASSERT_TRUE(r) << refused;
    EXPECT_EQ(r->get_header_value("Content-Encoding"), "") << refused;
    EXPECT_EQ(r->body, plain->body) << refused;
  }
}

Result<config::Loaded> Load(const std::vector<std::string>& args,
                            const config::Environment& env = {}) {
  return config::Load(SchedulerSchema(), args, env);
}

TEST(SchedulerUiConfig, OffByDefaultOnByFlagOrEnvironment) {
  Result<config::Loaded> defaults = Load({});
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_FALSE(AppOptions::FromConfig(defaults->config).server.ui);

  Result<config::Loaded> flag = Load({"--scheduler.ui.enabled=true"});
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  EXPECT_TRUE(AppOptions::FromConfig(flag->config).server.ui);

  Result<config::Loaded> env = Load({}, {{"TESSERA_SCHEDULER_UI_ENABLED", "true"}});
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_TRUE(AppOptions::FromConfig(env->config).server.ui);
}

TEST(SchedulerUiConfig, ANonBooleanIsRefusedWithTheKey) {
  Result<config::Loaded> bad = Load({"--scheduler.ui.enabled=maybe"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("scheduler.ui.enabled"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("maybe"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace tessera::scheduler
