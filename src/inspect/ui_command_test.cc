// `kubectl tessera ui` end to end in one process: the fake API server's pods/proxy passes the
// requests on to a stand-in scheduler (the real page handler of src/ui and a canned /inspect and
// /fit) named by a Running pod; the command serves it locally until its wait hook returns.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "config/loader.h"
#include "inspect/inspect_command.h"
#include "inspect/inspect_test_support.h"
#include "inspect/ui_command.h"
#include "inspect/ui_proxy.h"
#include "ui/ui_handler.h"
#include "ui/ui_routes.h"

namespace tessera::inspect {
namespace {

using kube::Json;

const config::Schema& UiTestSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    config::AddCommonKeys(s);
    kube::AddConfigKeys(s);
    AddInspectKeys(s);
    AddUiKeys(s);
    return s;
  }();
  return schema;
}

// A user with a bearer token of their own: it must reach the API server only.
std::string Kubeconfig(const std::string& url) {
  return "apiVersion: v1\nkind: Config\n"
         "clusters: [{name: fake, cluster: {server: \"" +
         url +
         "\"}}]\n"
         "users: [{name: u, user: {token: user-secret}}]\n"
         "contexts: [{name: c, context: {cluster: fake, user: u}}]\n"
         "current-context: c\n";
}

// What stands for the scheduler: the page (or not), /inspect and /fit; it keeps every request's
// headers.
class StandInScheduler {
 public:
  explicit StandInScheduler(bool ui) {
    if (ui) ui::AddUiRoutes(server_);
    server_.Get("/inspect", [this](const httplib::Request& req, httplib::Response& res) {
      Keep(req);
      res.set_content(R"({"nodes":[],"allocations":[],"pending":[]})",
                      "application/json; charset=utf-8");
    });
    server_.Post("/fit", [this](const httplib::Request& req, httplib::Response& res) {
      Keep(req);
      res.set_content(R"({"fits":false,"echo":)" + req.body + "}", "application/json");
    });
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("secret_metric 1\n", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~StandInScheduler() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<httplib::Headers> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Keep(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    seen_.push_back(req.headers);
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<httplib::Headers> seen_;
};

// `kubectl tessera ui ARGS` on a thread of its own, until Stop().
class UiRun {
 public:
  explicit UiRun(std::vector<std::string> args) {
    Result<config::Loaded> loaded = config::Load(UiTestSchema(), args, {});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) return;
    loaded_ = std::move(*loaded);
    UiHooks hooks{.wait = [this] { stop_.get_future().wait(); },
                  .open_browser =
                      [this](const std::string& url) {
                        url_.set_value(url);
                        return Status::Ok();
                      }};
    thread_ = std::thread([this, hooks] {
      code_ = RunUi(loaded_->config, loaded_->positional, {}, hooks, out_, err_);
      finished_.set_value();
    });
  }
  ~UiRun() { Stop(); }

  // The URL given to the browser, or "" when the command ends first.
  std::string WaitForUrl() {
    auto url = url_.get_future();
    auto done = finished_.get_future().share();
    finished_shared_ = done;
    while (url.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
      if (done.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return "";
    }
    return url.get();
  }
  int Stop() {
    if (thread_.joinable()) {
      if (!stopped_) stop_.set_value();
      stopped_ = true;
      thread_.join();
    }
    return code_;
  }
  // Waits for a command that ends by itself.
  int Join() {
    stopped_ = true;  // its wait hook is never reached
    if (thread_.joinable()) thread_.join();
    return code_;
  }
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

 private:
  std::optional<config::Loaded> loaded_;
  std::promise<void> stop_, finished_;
  std::shared_future<void> finished_shared_;
  std::promise<std::string> url_;
  std::thread thread_;
  bool stopped_ = false;
  int code_ = -1;
  std::ostringstream out_, err_;
};

class UiCommandTest : public FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    kubeconfig_ = Kubeconfig(server_->url());
    ASSERT_TRUE(
        client_->Create(kube::kNamespaces, "", {{"metadata", {{"name", "tessera-system"}}}}).ok());
  }

  // A Running, Ready scheduler pod whose "https" port is `port` on 127.0.0.1, in `ns`.
  void AddSchedulerPod(const std::string& name, int port, bool running = true,
                       const std::string& ns = "tessera-system",
                       std::map<std::string, std::string> labels = {}) {
    labels["app.kubernetes.io/name"] = "tessera-scheduler";
    Json pod = kube::PodObject(ns, name, labels);
    pod["spec"]["containers"][0]["ports"] = {{{"name", "https"}, {"containerPort", port}}};
    pod["status"] = {{"phase", running ? "Running" : "Pending"},
                     {"podIP", "127.0.0.1"},
                     {"conditions", {{{"type", "Ready"}, {"status", running ? "True" : "False"}}}}};
    auto created = client_->Create(kube::kPods, ns, pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  std::vector<std::string> Args(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--kubeconfig", kubeconfig_, "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string kubeconfig_;
};

TEST_F(UiCommandTest, ServesTheSchedulersPageThroughThePodProxyUntilStopped) {
  StandInScheduler scheduler(/*ui=*/true);
  AddSchedulerPod("tessera-scheduler-1", scheduler.port());
  UiRun run(Args({}));
  const std::string url = run.WaitForUrl();
  ASSERT_FALSE(url.empty()) << run.err();
  ASSERT_TRUE(url.starts_with("http://127.0.0.1:") && url.ends_with("/ui/")) << url;
  EXPECT_NE(run.out().find("pod tessera-system/tessera-scheduler-1"), std::string::npos)
      << run.out();
  EXPECT_NE(run.out().find(url), std::string::npos) << run.out();
  const int port = std::stoi(url.substr(17));
  httplib::Client local("127.0.0.1", port);

  auto page = local.Get("/ui/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, ui::ServeUi("index.html", "").body);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("Content-Security-Policy"), ui::kContentSecurityPolicy);
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");

  auto js = local.Get("/ui/app.mjs");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, ui::ServeUi("app.mjs", "").body);
  auto again = local.Get("/ui/app.mjs", {{"If-None-Match", js->get_header_value("ETag")}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);

  auto root = local.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 302);
  EXPECT_EQ(root->get_header_value("Location"), "/ui/");

  auto inspect = local.Get(
      "/inspect", {{"Authorization", "Bearer page-token"}, {"Accept", "application/json"}});
  ASSERT_TRUE(inspect);
  EXPECT_EQ(inspect->status, 200);
  EXPECT_EQ(inspect->body, R"({"nodes":[],"allocations":[],"pending":[]})");

  auto fit = local.Post("/fit", R"({"claim":{"count":1}})", "application/json");
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->status, 200);
  EXPECT_EQ(fit->body, R"({"fits":false,"echo":{"claim":{"count":1}}})");

  // The page's token goes on as X-Tessera-Authorization; the user's own never reaches the pod.
  std::vector<httplib::Headers> seen = scheduler.seen();
  ASSERT_EQ(seen.size(), 2u);
  auto header = [](const httplib::Headers& h, const std::string& name) {
    auto it = h.find(name);
    return it == h.end() ? std::string() : it->second;
  };
  EXPECT_EQ(header(seen[0], "X-Tessera-Authorization"), "Bearer page-token");
  // The page's Accept goes on as it was, alone.
  EXPECT_EQ(seen[0].count("Accept"), 1u);
  EXPECT_EQ(header(seen[0], "Accept"), "application/json");
  for (const httplib::Headers& h : seen) {
    EXPECT_EQ(header(h, "Authorization"), "");
    for (const auto& [name, value] : h) EXPECT_EQ(value.find("user-secret"), std::string::npos);
  }

  // Nothing but the page's requests goes through.
  auto metrics = local.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 404);
  EXPECT_EQ(metrics->body.find("secret_metric"), std::string::npos);
  EXPECT_NE(metrics->body.find("only the page's requests"), std::string::npos) << metrics->body;
  auto plain = local.Post("/fit", "{}", "text/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 415);
  auto cross = local.Post("/fit", {{"Origin", "http://evil.example"}}, "{}", "application/json");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  auto rebound = local.Get("/inspect", {{"Host", "evil.example:" + std::to_string(port)}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  EXPECT_EQ(scheduler.seen().size(), 2u);

  EXPECT_EQ(run.Stop(), 0) << run.err();
}

TEST_F(UiCommandTest, NoBrowserOnlyPrintsTheAddress) {
  StandInScheduler scheduler(/*ui=*/true);
  AddSchedulerPod("s", scheduler.port());
  UiRun run(Args({"--no-browser"}));
  for (int i = 0; i < 500 && run.out().find("Press Ctrl-C") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(run.out().find("http://127.0.0.1:"), std::string::npos) << run.out() << run.err();
  EXPECT_EQ(run.Stop(), 0);
}

TEST_F(UiCommandTest, SaysWhenNoSchedulerRuns) {
  AddSchedulerPod("not-yet", 1, /*running=*/false);
  UiRun run(Args({}));
  EXPECT_EQ(run.Join(), 1);
  EXPECT_NE(run.err().find("no running Tessera scheduler pod (label "
                           "app.kubernetes.io/name=tessera-scheduler) in namespace "
                           "tessera-system"),
            std::string::npos)
      << run.err();
}

// Issue 35 review: a pod with the scheduler's label in another namespace (one that sorts first)
// is never served the user's page and the token pasted there: only tessera-system (or -n) is read.
TEST_F(UiCommandTest, ADecoyPodInAnotherNamespaceIsNeverReached) {
  ASSERT_TRUE(client_->Create(kube::kNamespaces, "", {{"metadata", {{"name", "aaa-decoy"}}}}).ok());
  StandInScheduler decoy(/*ui=*/true);
  AddSchedulerPod("tessera-scheduler-0", decoy.port(), true, "aaa-decoy");
  {
    UiRun only_decoy(Args({}));
    EXPECT_EQ(only_decoy.Join(), 1);
    EXPECT_NE(only_decoy.err().find("no running Tessera scheduler pod (label "
                                    "app.kubernetes.io/name=tessera-scheduler) in namespace "
                                    "tessera-system"),
              std::string::npos)
        << only_decoy.err();
  }
  StandInScheduler scheduler(/*ui=*/true);
  AddSchedulerPod("tessera-scheduler-1", scheduler.port());
  UiRun run(Args({}));
  const std::string url = run.WaitForUrl();
  ASSERT_FALSE(url.empty()) << run.err();
  EXPECT_NE(run.out().find("pod tessera-system/tessera-scheduler-1"), std::string::npos)
      << run.out();
  httplib::Client local("127.0.0.1", std::stoi(url.substr(17)));
  auto inspect = local.Get("/inspect", {{"Authorization", "Bearer page-token"}});
  ASSERT_TRUE(inspect);
  EXPECT_EQ(inspect->status, 200);
  EXPECT_EQ(scheduler.seen().size(), 1u);
  EXPECT_TRUE(decoy.seen().empty());
  EXPECT_EQ(run.Stop(), 0) << run.err();

  UiRun empty(Args({"-n", ""}));
  EXPECT_EQ(empty.Join(), 2);
  EXPECT_NE(empty.err().find("-n is empty: name the namespace of the Tessera scheduler"),
            std::string::npos)
      << empty.err();
}

// Only the leading replica has the pending pods' filter reasons: its pod is chosen over a
// ready one that sorts first.
TEST_F(UiCommandTest, PrefersTheLeadingReplica) {
  StandInScheduler follower(/*ui=*/true), leader(/*ui=*/true);
  AddSchedulerPod("tessera-scheduler-a", follower.port());
  AddSchedulerPod("tessera-scheduler-b", leader.port(), true, "tessera-system",
                  {{"tessera.io/scheduler-leader", "true"}});
  UiRun run(Args({"--no-browser"}));
  for (int i = 0; i < 500 && run.out().find("Press Ctrl-C") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(run.out().find("pod tessera-system/tessera-scheduler-b"), std::string::npos)
      << run.out() << run.err();
  EXPECT_EQ(run.Stop(), 0);
}

TEST_F(UiCommandTest, SaysWhenTheSchedulerServesNoPage) {
  StandInScheduler scheduler(/*ui=*/false);
  AddSchedulerPod("s", scheduler.port());
  UiRun run(Args({"-n", "tessera-system"}));
  EXPECT_EQ(run.Join(), 1);
  EXPECT_NE(run.err().find("serves no web page: it runs with scheduler.ui.enabled=false"),
            std::string::npos)
      << run.err();
}

TEST_F(UiCommandTest, SaysWhenTheApiServerCannotReachThePod) {
  int port = 0;
  {
    StandInScheduler gone(/*ui=*/true);
    port = gone.port();
  }
  AddSchedulerPod("s", port);
  UiRun run(Args({}));
  EXPECT_EQ(run.Join(), 1);
  EXPECT_NE(run.err().find("the API server cannot reach the scheduler's pod tessera-system/s on "
                           "port " +
                           std::to_string(port) + " (https: error trying to reach"),
            std::string::npos)
      << run.err();
}

TEST_F(UiCommandTest, SaysWhenTheLocalPortIsTaken) {
  StandInScheduler scheduler(/*ui=*/true);
  AddSchedulerPod("s", scheduler.port());
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string taken = std::to_string(ntohs(addr.sin_port));
  UiRun run(Args({"--port", taken}));
  EXPECT_EQ(run.Join(), 1);
  close(fd);
  EXPECT_NE(run.err().find("cannot listen on 127.0.0.1:" + taken +
                           ": the port is taken by another program; choose another with --port"),
            std::string::npos)
      << run.err();
}

TEST_F(UiCommandTest, RefusesAnAddressOtherMachinesReach) {
  UiRun run(Args({"--address", "0.0.0.0"}));
  EXPECT_EQ(run.Join(), 2);
  EXPECT_NE(run.err().find("--address 0.0.0.0: give a loopback address"), std::string::npos)
      << run.err();
  UiRun extra(Args({"somewhere"}));
  EXPECT_EQ(extra.Join(), 2);
  EXPECT_NE(extra.err().find("takes no arguments, got somewhere"), std::string::npos);
}

// The real command blocks SIGINT and SIGTERM in its thread for sigwait: the browser it starts
// must not inherit that mask (it could not be stopped with Ctrl-C or kill), and runs in a process
// group of its own (the terminal's Ctrl-C stops the command, not the browser). $BROWSER runs
// through /bin/sh: where that is dash, which clears its signal mask at start, the mask half
// passes without the fix too; the process group half does not.
TEST(UiBrowser, StartsWithNoSignalBlockedInAProcessGroupOfItsOwn) {
  const std::string dir = ::testing::TempDir() + "/ui-browser-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string seen = dir + "/seen";
  const std::string script = dir + "/browser";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
        << "grep '^SigBlk:' /proc/$$/status > '" << seen << ".tmp'\n"
        << "cut -d' ' -f5 /proc/$$/stat >> '" << seen << ".tmp'\n"
        << "mv '" << seen << ".tmp' '" << seen << "'\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  setenv("BROWSER", script.c_str(), 1);
  Status opened;
  // ProcessUiHooks blocks the signals in its calling thread: a thread of the test's own.
  std::thread([&] { opened = ProcessUiHooks().open_browser("http://127.0.0.1:1/ui/"); }).join();
  unsetenv("BROWSER");
  ASSERT_TRUE(opened.ok()) << opened.ToString();
  for (int i = 0; i < 500 && !std::filesystem::exists(seen); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream in(seen);
  std::string blocked, group;
  std::getline(in, blocked);
  std::getline(in, group);
  EXPECT_EQ(blocked, "SigBlk:\t0000000000000000");
  ASSERT_FALSE(group.empty());
  EXPECT_NE(std::stol(group), static_cast<long>(getpgrp()));
  std::filesystem::remove_all(dir);
}

TEST(UiProxyPaths, PassesOnOnlyThePagesRequests) {
  EXPECT_EQ(AllowedUpstreamPath("GET", "/ui/", ""), "/ui/");
  EXPECT_EQ(AllowedUpstreamPath("GET", "/ui", ""), "/ui");
  EXPECT_EQ(AllowedUpstreamPath("HEAD", "/ui/app.mjs", ""), "/ui/app.mjs");
  EXPECT_EQ(AllowedUpstreamPath("GET", "/inspect", "ns=a"), "/inspect?ns=a");
  EXPECT_EQ(AllowedUpstreamPath("POST", "/fit", ""), "/fit");
  for (auto [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/metrics"},
                                                        {"GET", "/fit"},
                                                        {"POST", "/inspect"},
                                                        {"POST", "/bind"},
                                                        {"POST", "/filter"},
                                                        {"GET", "/ui/../metrics"},
                                                        {"GET", "/ui/a b"},
                                                        {"DELETE", "/ui/"},
                                                        {"GET", "/inspectx"}}) {
    EXPECT_EQ(AllowedUpstreamPath(method, path, ""), std::nullopt) << method << " " << path;
  }
  EXPECT_EQ(AllowedUpstreamPath("GET", "/inspect", "a=\r\nX: y"), std::nullopt);
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
}

}  // namespace
}  // namespace tessera::inspect
