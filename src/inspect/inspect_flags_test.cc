// kubectl's connection flags and `version` against the fake API server: --context, a KUBECONFIG
// list merged as kubectl merges it, a user that is an exec credential plugin, --request-timeout,
// --cluster and --user, --server and --token without a kubeconfig, impersonation (--as,
// --as-group, --as-uid) and basic auth (--username, --password) as the server receives them, and
// the scheduler's version from its pods or its /metrics.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "config/loader.h"
#include "fakeapiserver/fake_api_server.h"
#include "inspect/inspect_command.h"
#include "inspect/inspect_test_support.h"
#include "inspect/version_command.h"
#include "kube/client.h"
#include "kube/config_keys.h"
#include "kube/recording_proxy_for_test.h"

namespace tessera::inspect {
namespace {

using kube::Json;
namespace fs = std::filesystem;

class InspectFlagsTest : public FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    if (HasFatalFailure()) return;
    Json gpus = {
        {"version", 1},
        {"gpus", {{{"uuid", "GPU-a0"}, {"index", 0}, {"model", "SimGPU"}, {"memoryMiB", 1000}}}}};
    Json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", "gpu-a"}, {"annotations", {{"tessera.io/gpus", gpus.dump()}}}}}};
    ASSERT_TRUE(client_->Create(kube::kNodes, "", node).ok());
    dir_ = fs::temp_directory_path() /
           ("tessera-inspect-flags-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text, bool executable = false) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    if (executable) chmod(path.c_str(), 0755);
    return path.string();
  }

  InspectRun Inspect(const std::vector<std::string>& args, const kube::Environment& env) {
    return RunWithArgs(
        args, [&](const config::Config& cfg, const auto& positional, auto& out, auto& err) {
          return RunInspect(cfg, positional, env, false, out, err);
        });
  }

  InspectRun Version(const std::vector<std::string>& args, const kube::Environment& env) {
    return RunWithArgs(args, [&](const config::Config& cfg, const auto&, auto& out, auto& err) {
      return RunVersion(cfg, env, "9.9.9", out, err);
    });
  }

  const std::string kGpus = "jsonpath={.nodes[*].name}";
  fs::path dir_;
};

TEST_F(InspectFlagsTest, ContextChoosesTheKubeconfigContext) {
  std::string kubeconfig = Write("config",
                                 "current-context: dead\n"
                                 "contexts:\n"
                                 "- {name: dead, context: {cluster: dead}}\n"
                                 "- {name: fake, context: {cluster: fake}}\n"
                                 "clusters:\n"
                                 "- {name: dead, cluster: {server: 'http://127.0.0.1:1'}}\n"
                                 "- {name: fake, cluster: {server: '" +
                                     server_->url() + "'}}\n");
  InspectRun current =
      Inspect({"--kubeconfig", kubeconfig, "--request-timeout", "2s", "-o", kGpus}, {});
  EXPECT_EQ(current.code, 1);
  EXPECT_NE(current.err.find("cannot reach the API server"), std::string::npos) << current.err;
  InspectRun fake = Inspect({"--kubeconfig", kubeconfig, "--context", "fake", "-o", kGpus}, {});
  ASSERT_EQ(fake.code, 0) << fake.err;
  EXPECT_EQ(fake.out, "gpu-a");
  InspectRun unknown = Inspect({"--kubeconfig", kubeconfig, "--context=prod"}, {});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("context \"prod\" is not among contexts[] (dead, fake)"),
            std::string::npos)
      << unknown.err;
}

// KUBECONFIG=contexts:clusters-and-users, the user an exec plugin (as EKS, GKE, AKS and
// kubelogin configure it): neither file works alone.
TEST_F(InspectFlagsTest, KubeconfigListWithAnExecPlugin) {
  Write("get-token",
        "#!/bin/sh\n"
        "echo \"$1 $KUBERNETES_EXEC_INFO\" > \"$(dirname \"$0\")/plugin-ran\"\n"
        "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
        "\"status\":{\"token\":\"t\"}}'\n",
        /*executable=*/true);
  std::string contexts = Write("contexts",
                               "current-context: fake\n"
                               "contexts: [{name: fake, context: {cluster: fake, user: sso}}]\n");
  std::string clusters =
      Write("clusters", "clusters: [{name: fake, cluster: {server: '" + server_->url() +
                            "'}}]\n"
                            "users:\n- name: sso\n  user:\n    exec:\n"
                            "      apiVersion: client.authentication.k8s.io/v1\n"
                            "      command: ./get-token\n      args: [token]\n"
                            "      interactiveMode: Never\n      provideClusterInfo: true\n");
  InspectRun run = Inspect({"-o", kGpus}, {{"KUBECONFIG", contexts + ":" + clusters}});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a");
  std::ifstream ran(dir_ / "plugin-ran");
  std::string line;
  std::getline(ran, line);
  EXPECT_NE(line.find("token {"), std::string::npos) << line;
  EXPECT_NE(line.find("\"server\":\"" + server_->url() + "\""), std::string::npos) << line;
}

TEST_F(InspectFlagsTest, RequestTimeoutEndsASlowRequest) {
  std::string kubeconfig = Write("config",
                                 "current-context: c\n"
                                 "contexts: [{name: c, context: {cluster: k}}]\n"
                                 "clusters: [{name: k, cluster: {server: '" +
                                     server_->url() + "'}}]\n");
  server_->SetLatency(std::chrono::milliseconds(3000));
  auto start = std::chrono::steady_clock::now();
  InspectRun run = Inspect({"--kubeconfig", kubeconfig, "--request-timeout", "300ms"}, {});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(run.code, 1);
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  server_->SetLatency(std::chrono::milliseconds(0));

  InspectRun bad = Inspect({"--kubeconfig", kubeconfig, "--request-timeout", "5 minutes"}, {});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--request-timeout 5 minutes: expected a duration"), std::string::npos)
      << bad.err;
}

// A kubeconfig whose current context reaches nothing: --cluster and --user pick working entries.
TEST_F(InspectFlagsTest, ClusterAndUserChooseKubeconfigEntries) {
  kube::RecordingProxy proxy(server_->url());
  std::string kubeconfig =
      Write("config",
            "current-context: dead\n"
            "contexts: [{name: dead, context: {cluster: dead, user: nobody}}]\n"
            "clusters:\n"
            "- {name: dead, cluster: {server: 'http://127.0.0.1:1'}}\n"
            "- {name: fake, cluster: {server: '" +
                proxy.url() +
                "'}}\n"
                "users:\n"
                "- {name: nobody, user: {token: wrong}}\n"
                "- {name: admin, user: {token: t-admin}}\n");
  InspectRun run = Inspect(
      {"--kubeconfig", kubeconfig, "--cluster", "fake", "--user", "admin", "-o", kGpus}, {});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a");
  ASSERT_FALSE(proxy.received().empty());
  for (const auto& r : proxy.received()) EXPECT_EQ(r.Value("Authorization"), "Bearer t-admin");

  InspectRun user = Inspect({"--kubeconfig", kubeconfig, "--cluster=fake", "--user=root"}, {});
  EXPECT_EQ(user.code, 1);
  EXPECT_NE(user.err.find("user \"root\" (--user) is not among users[] (admin, nobody)"),
            std::string::npos)
      << user.err;
  InspectRun cluster = Inspect({"--kubeconfig", kubeconfig, "--cluster", "prod"}, {});
  EXPECT_EQ(cluster.code, 1);
  EXPECT_NE(cluster.err.find("cluster \"prod\" (--cluster) is not among clusters[] (dead, fake)"),
            std::string::npos)
      << cluster.err;
}

TEST_F(InspectFlagsTest, ServerAndTokenWithoutAKubeconfig) {
  kube::RecordingProxy proxy(server_->url());
  InspectRun run = Inspect({"-s", proxy.url(), "--token", "abc", "-o", kGpus}, {});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a");
  ASSERT_FALSE(proxy.received().empty());
  for (const auto& r : proxy.received()) EXPECT_EQ(r.Value("Authorization"), "Bearer abc");
}

// Every request of `inspect` and `version` carries the impersonation flags.
TEST_F(InspectFlagsTest, ImpersonationFlagsReachTheServerOnEveryRequest) {
  kube::RecordingProxy proxy(server_->url());
  const std::vector<std::string> as = {"--server", proxy.url(),  "--as", "jane",     "--as-group",
                                       "dev",      "--as-group", "ops",  "--as-uid", "42"};
  std::vector<std::string> args = as;
  args.insert(args.end(), {"-o", kGpus});
  InspectRun run = Inspect(args, {});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a");
  InspectRun version = Version(as, {});
  EXPECT_EQ(version.code, 1);  // no scheduler pod, but the request was made
  std::vector<kube::RecordingProxy::Received> received = proxy.received();
  ASSERT_GE(received.size(), 3u);  // nodes, pods, ... and version's pods
  for (const auto& r : received) {
    SCOPED_TRACE(r.method + " " + r.target);
    EXPECT_EQ(r.Values("Impersonate-User"), std::vector<std::string>{"jane"});
    EXPECT_EQ(r.Values("Impersonate-Group"), (std::vector<std::string>{"dev", "ops"}));
    EXPECT_EQ(r.Values("Impersonate-Uid"), std::vector<std::string>{"42"});
  }

  InspectRun no_user = Inspect({"--server", proxy.url(), "--as-group", "dev"}, {});
  EXPECT_EQ(no_user.code, 1);
  EXPECT_NE(no_user.err.find("requesting uid, groups or user-extra without impersonating a user"),
            std::string::npos)
      << no_user.err;
}

TEST_F(InspectFlagsTest, BasicAuthFlagsOnlyOverHttps) {
  kube::RecordingProxy plain(server_->url());
  InspectRun refused =
      Inspect({"--server", plain.url(), "--username", "ann", "--password", "pw"}, {});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("basic auth (username ann) is not sent to " + plain.url() +
                             ": over plain http the password crosses the network"),
            std::string::npos)
      << refused.err;
  EXPECT_TRUE(plain.received().empty());

  ASSERT_TRUE(kube::MakeSelfSignedCertificate(dir_.string())) << "openssl failed";
  kube::RecordingProxy tls(server_->url(), (dir_ / "server.crt").string(),
                           (dir_ / "server.key").string());
  InspectRun run = Inspect({"--server", tls.url(), "--insecure-skip-tls-verify", "--username",
                            "ann", "--password", "pw", "-o", kGpus},
                           {});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a");
  ASSERT_FALSE(tls.received().empty());
  for (const auto& r : tls.received()) {
    EXPECT_EQ(r.Value("Authorization"), "Basic " + Base64Encode("ann:pw"));
  }
}

TEST(RequestTimeoutTest, ReadsDurationsAsKubectlDoes) {
  auto timeout = [](const std::string& value) -> Result<std::chrono::milliseconds> {
    std::vector<std::string> args;
    if (!value.empty()) args = {"--request-timeout", value};
    Result<config::Loaded> loaded = config::Load(InspectTestSchema(), args, {});
    if (!loaded.ok()) return loaded.status();
    return RequestTimeout(loaded->config);
  };
  using std::chrono::milliseconds;
  EXPECT_EQ(*timeout(""), milliseconds(30'000));  // kube.timeout
  EXPECT_EQ(*timeout("5"), milliseconds(5'000));
  EXPECT_EQ(*timeout("0"), milliseconds(0));
  EXPECT_EQ(*timeout("250ms"), milliseconds(250));
  EXPECT_EQ(*timeout("1m30s"), milliseconds(90'000));
  EXPECT_EQ(*timeout("1.5h"), milliseconds(5'400'000));
  for (const char* bad : {"abc", "5x", "-1s", "s", "1.5"}) {
    EXPECT_FALSE(timeout(bad).ok()) << bad;
  }
}

TEST_F(InspectFlagsTest, VersionShowsThePluginsAndTheSchedulersPods) {
  std::string kubeconfig = Write("config",
                                 "current-context: c\n"
                                 "contexts: [{name: c, context: {cluster: k}}]\n"
                                 "clusters: [{name: k, cluster: {server: '" +
                                     server_->url() + "'}}]\n");
  InspectRun none = Version({"--kubeconfig", kubeconfig}, {});
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.out, "kubectl-tessera 9.9.9\n");
  EXPECT_NE(none.err.find("no running scheduler pod"), std::string::npos) << none.err;

  ASSERT_TRUE(
      client_->Create(kube::kNamespaces, "", {{"metadata", {{"name", "tessera-system"}}}}).ok());
  auto pod = [](const std::string& name, const std::string& image, const std::string& version) {
    Json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "tessera-system"},
                {"labels", {{"app.kubernetes.io/name", "tessera-scheduler"}}}}},
              {"spec", {{"containers", {{{"name", "tessera"}, {"image", image}}}}}}};
    if (!version.empty()) p["metadata"]["labels"]["app.kubernetes.io/version"] = version;
    return p;
  };
  ASSERT_TRUE(client_
                  ->Create(kube::kPods, "tessera-system",
                           pod("sched-a", "reg.example:5000/tessera:0.1.0", ""))
                  .ok());
  ASSERT_TRUE(
      client_->Create(kube::kPods, "tessera-system", pod("sched-b", "tessera", "0.2.0")).ok());
  InspectRun run = Version({"--kubeconfig", kubeconfig}, {});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "kubectl-tessera 9.9.9\n"
            "scheduler 0.1.0 (pod tessera-system/sched-a, image reg.example:5000/tessera:0.1.0)\n"
            "scheduler 0.2.0 (pod tessera-system/sched-b, image tessera)\n");
}

TEST(VersionTest, SchedulerVersionFromItsMetrics) {
  httplib::Server server;
  server.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "# TYPE tessera_build_info gauge\n"
        "tessera_build_info{component=\"scheduler\",version=\"1.2.3\"} 1\n",
        "text/plain");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  for (int i = 0; i < 500 && !server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  Result<config::Loaded> loaded = config::Load(InspectTestSchema(), {"--scheduler", url}, {});
  ASSERT_TRUE(loaded.ok());
  std::ostringstream out, err;
  EXPECT_EQ(RunVersion(loaded->config, {}, "9.9.9", out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "kubectl-tessera 9.9.9\nscheduler 1.2.3 (" + url + ")\n");
  server.stop();
  serving.join();
}

}  // namespace
}  // namespace tessera::inspect
