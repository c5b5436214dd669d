// Golden-output tests of `tessera inspect`: a fake API server holds GPU nodes, bound pods with
// decisions and pending pods; the command's output is compared with testdata/*.golden. The
// --scheduler path reads a canned GET /inspect answer (testdata/scheduler_inspect.json, in the
// format of src/scheduler/inspect.h) from a tiny HTTP server.
//
// To regenerate the goldens after an intended change of the output, run
//   TESSERA_UPDATE_GOLDENS=1 build-<dir>/tests/inspect_test
// then review `git diff src/inspect/testdata`.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "config/loader.h"
#include "fakeapiserver/fake_api_server.h"
#include "inspect/golden_for_test.h"
#include "inspect/inspect_command.h"
#include "inspect/inspect_test_support.h"
#include "kube/client.h"
#include "kube/config_keys.h"

namespace tessera::inspect {
namespace {

using kube::Json;

std::string Kubeconfig(const std::string& url) {
  return "apiVersion: v1\nkind: Config\n"
         "clusters: [{name: fake, cluster: {server: \"" +
         url +
         "\"}}]\n"
         "users: [{name: u, user: {}}]\n"
         "contexts: [{name: c, context: {cluster: fake, user: u}}]\n"
         "current-context: c\n";
}

InspectRun Inspect(std::vector<std::string> args, bool terminal = false) {
  return RunWithArgs(args,
                     [&](const config::Config& cfg, const auto& positional, auto& out, auto& err) {
                       return RunInspect(cfg, positional, {}, terminal, out, err);
                     });
}

Json Inventory(const std::string& prefix, int count, const std::string& model, uint64_t mib,
               int unhealthy = -1) {
  Json gpus = Json::array();
  for (int i = 0; i < count; ++i) {
    gpus.push_back({{"uuid", prefix + std::to_string(i)},
                    {"index", i},
                    {"model", model},
                    {"memoryMiB", mib},
                    {"sms", 82},
                    {"numa", i / 2},
                    {"healthy", i != unhealthy}});
  }
  return {{"version", 1}, {"gpus", gpus}};
}

Json Device(const std::string& uuid, uint64_t mib, int cores, bool exclusive = false) {
  Json d = {{"uuid", uuid}, {"memoryMiB", mib}, {"cores", cores}};
  if (exclusive) d["exclusive"] = true;
  return d;
}

class InspectGoldenTest : public FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    if (HasFatalFailure()) return;
    kubeconfig_ = Kubeconfig(server_->url());

    ASSERT_TRUE(client_->Create(kube::kNamespaces, "", {{"metadata", {{"name", "ml"}}}}).ok());
    AddNode("gpu-a", Inventory("GPU-a", 2, "SimGPU-3090", 24268).dump(), "10.0.0.11");
    AddNode("gpu-b", Inventory("GPU-b", 4, "NVIDIA H200", 144384, 3).dump(), "10.0.0.12");
    AddNode("cpu-1", "");
    AddNode("gpu-broken", "{\"version\":1,\"gpus\":[{\"index\":0}]}");

    Bound("default", "vgpu-a", "gpu-a", "Running",
          {{{"name", "main"}, {"mode", "hard"}, {"devices", {Device("GPU-a0", 4096, 30)}}}});
    Bound("default", "vcuda-a", "gpu-a", "Running",
          {{{"name", "cuda"}, {"mode", "elastic"}, {"devices", {Device("GPU-a0", 4096, 20)}}},
           {{"name", "warmup"},
            {"init", true},
            {"mode", "hard"},
            {"devices", {Device("GPU-a0", 8192, 0)}}}});
    Bound("ml", "trainer", "gpu-b", "Running",
          {{{"name", "trainer"},
            {"mode", "hard"},
            {"devices",
             {Device("GPU-b0", 144384, 100, true), Device("GPU-b1", 144384, 100, true)}}}});
    Bound("default", "share", "gpu-b", "Pending",
          {{{"name", "app"}, {"mode", "hard"}, {"devices", {Device("GPU-b2", 8192, 0)}}}});
    Bound("default", "done", "gpu-a", "Succeeded",
          {{{"name", "main"}, {"mode", "hard"}, {"devices", {Device("GPU-a1", 1000, 10)}}}});
    Bound("default", "given-up", "gpu-a", "Running",
          {{{"name", "main"}, {"mode", "hard"}, {"devices", {Device("GPU-a1", 1000, 10)}}}},
          "GPU GPU-a1 is unhealthy");
    Json garbled = PodObject("default", "garbled");
    garbled["spec"]["nodeName"] = "gpu-a";
    garbled["metadata"]["annotations"] = {{"tessera.io/allocation", "{\"version\":1"}};
    Create(garbled);

    // Pending: one with kube-scheduler's condition, one with only an event, one not seen yet,
    // and a pod that is no GPU pod at all (not listed).
    Json big = PodObject("default", "big");
    big["spec"]["schedulerName"] = "tessera";
    big["status"] = {
        {"phase", "Pending"},
        {"conditions",
         {{{"type", "PodScheduled"},
           {"status", "False"},
           {"reason", "Unschedulable"},
           {"message",
            "0/4 nodes are available: 1 insufficient GPU memory: need 24320 MiB on 1 GPU, "
            "largest free 24268 MiB (GPU 1, SimGPU-3090)."}}}}};
    Create(big);
    Json waiting = PodObject("default", "waiting");
    waiting["spec"]["schedulerName"] = "tessera";
    Json created = Create(waiting);
    ASSERT_TRUE(client_
                    ->CreateEvent(created, "Warning", "FailedScheduling",
                                  "0/4 nodes are available: needs 2 GPUs to itself (exclusive)",
                                  "tessera")
                    .ok());
    Json fresh = PodObject("default", "fresh");
    fresh["spec"]["containers"][0]["resources"] = {{"limits", {{"tencent.com/vcuda-core", "50"}}}};
    Create(fresh);
    Create(PodObject("default", "web"));
  }

  static Json PodObject(const std::string& ns, const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
  }

  Json Create(const Json& pod) {
    auto created = client_->Create(kube::kPods, kube::NamespaceOf(pod), pod);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : Json();
  }

  void AddNode(const std::string& name, const std::string& inventory,
               const std::string& address = "") {
    Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
    if (!address.empty()) {
      node["status"]["addresses"] = {{{"type", "Hostname"}, {"address", name}},
                                     {{"type", "InternalIP"}, {"address", address}}};
    }
    if (!inventory.empty()) node["metadata"]["annotations"] = {{"tessera.io/gpus", inventory}};
    auto created = client_->Create(kube::kNodes, "", node);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  void Bound(const std::string& ns, const std::string& name, const std::string& node,
             const std::string& phase, const Json& containers, const std::string& failed = "") {
    Json pod = PodObject(ns, name);
    pod["spec"]["nodeName"] = node;
    pod["spec"]["schedulerName"] = "tessera";
    pod["status"] = {{"phase", phase}};
    Json allocation = {{"version", 1}, {"node", node}, {"containers", containers}};
    pod["metadata"]["annotations"] = {{"tessera.io/allocation", allocation.dump()}};
    if (!failed.empty()) pod["metadata"]["annotations"]["tessera.io/allocation-failed"] = failed;
    Create(pod);
  }

  InspectRun InspectApi(std::vector<std::string> args, bool terminal = false) {
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_});
    return Inspect(args, terminal);
  }

  std::string kubeconfig_;
};

TEST_F(InspectGoldenTest, Plain) {
  InspectRun run = InspectApi({});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("plain", run.out);
}

TEST_F(InspectGoldenTest, Details) {
  InspectRun run = InspectApi({"-d"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("details", run.out);
}

TEST_F(InspectGoldenTest, Wide) {
  InspectRun run = InspectApi({"-o", "wide"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("wide", run.out);
}

TEST_F(InspectGoldenTest, Json) {
  InspectRun run = InspectApi({"-o", "json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("json", run.out);
  Json doc = Json::parse(run.out);  // and it is JSON
  EXPECT_EQ(doc["totals"]["pods"], 4);
}

// gpushare's `kubectl inspect gpushare`: a line per node, each GPU's allocated/total GiB.
TEST_F(InspectGoldenTest, PerNodeInGib) {
  InspectRun run = InspectApi({"-o", "gib"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("gib", run.out);
  InspectRun details = InspectApi({"-o", "gib", "-d"});
  ASSERT_EQ(details.code, 0) << details.err;
  ExpectGolden("gib_details", details.out);
}

TEST_F(InspectGoldenTest, Yaml) {
  InspectRun run = InspectApi({"-o", "yaml"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("yaml", run.out);
}

TEST_F(InspectGoldenTest, JsonPath) {
  InspectRun run = InspectApi(
      {"-o", "jsonpath={range .nodes[*]}{.name}{\"\\t\"}{.gpus[*].usedMiB}{\"\\n\"}{end}"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "gpu-a\t12288 0\ngpu-b\t144384 144384 8192 0\ngpu-broken\t\n");
  InspectRun one = InspectApi({"gpu-a", "--output=jsonpath={.totals.usedMiB}"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, "12288");
}

TEST_F(InspectGoldenTest, NoHeaders) {
  InspectRun run = InspectApi({"--no-headers"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("plain_no_headers", run.out);
  InspectRun gib = InspectApi({"-o", "gib", "--no-headers"});
  ASSERT_EQ(gib.code, 0) << gib.err;
  ExpectGolden("gib_no_headers", gib.out);
}

// -n: only the namespace's pods are read; the GPUs show what it holds.
TEST_F(InspectGoldenTest, NamespaceShowsOnlyItsPods) {
  InspectRun run = InspectApi({"-n", "ml", "-d"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("namespace_ml", run.out);
  InspectRun long_flag = InspectApi({"--namespace=ml", "-d"});
  EXPECT_EQ(long_flag.out, run.out);
  InspectRun empty = InspectApi({"-n", "nobody", "-o", "jsonpath={.totals.pods} {.pending}"});
  ASSERT_EQ(empty.code, 0) << empty.err;
  EXPECT_EQ(empty.out, "0 []");
}

// Issue 36: read from the API server, the namespaces' GPU quotas are counted from the pods (any
// dialect, not finished, bound or not) as the scheduler counts them.
TEST_F(InspectGoldenTest, QuotasAreCountedFromTheApiServersPods) {
  auto created = client_->Create(kube::kResourceQuotas, "ml",
                                 {{"apiVersion", "v1"},
                                  {"kind", "ResourceQuota"},
                                  {"metadata", {{"name", "gpu-quota"}, {"namespace", "ml"}}},
                                  {"spec",
                                   {{"hard",
                                     {{"requests.tessera.io/gpu-memory", "10Gi"},
                                      {"requests.tessera.io/gpu-cores", "200"}}}}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json vgpu = PodObject("ml", "vgpu");
  vgpu["spec"]["containers"][0]["resources"] = {
      {"limits", {{"nvidia.com/gpumem", "2048"}, {"nvidia.com/gpucores", "30"}}}};
  Create(vgpu);
  Json vcuda = PodObject("ml", "vcuda");
  vcuda["spec"]["containers"][0]["resources"] = {
      {"limits", {{"tencent.com/vcuda-memory", "16"}, {"tencent.com/vcuda-core", "20"}}}};
  Create(vcuda);
  Json done = PodObject("ml", "done");
  done["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpumem", "4096"}}}};
  done["status"] = {{"phase", "Succeeded"}};
  Create(done);
  Json elsewhere = PodObject("default", "elsewhere");
  elsewhere["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpumem", "4096"}}}};
  Create(elsewhere);

  InspectRun run = InspectApi({"-n", "ml"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("api_quotas_ml", run.out);
  InspectRun all = InspectApi({"-o", "jsonpath={.quotas}"});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(Json::parse(all.out), Json::parse(R"([{"namespace":"ml","name":"gpu-quota",
      "limits":{"memoryBytes":10737418240,"cores":200},
      "used":{"memoryBytes":6442450944,"cores":50}}])"));
}

TEST_F(InspectGoldenTest, BadOutputFormatsAreRefused) {
  InspectRun run = InspectApi({"-o", "table"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err,
            "tessera inspect: -o table: expected plain, wide, gib, json, yaml or "
            "jsonpath=TEMPLATE\n");
  InspectRun filter = InspectApi({"-o", "jsonpath={.nodes[?(@.name==\"gpu-a\")]}"});
  EXPECT_EQ(filter.code, 2);
  EXPECT_NE(filter.err.find("is not supported"), std::string::npos) << filter.err;
  EXPECT_EQ(filter.out, "");
}

TEST_F(InspectGoldenTest, SingleNodeWithDetails) {
  InspectRun run = InspectApi({"gpu-a", "-d"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("node_gpu_a", run.out);
}

// Issue 33: a node whose agent scales its GPUs' memory by 2 (memoryScaling in tessera.io/gpus):
// its 24 GiB GPU holds two pods of 20 GiB. Every view gives the shares against the virtual
// memory and the physical memory beside it; the other nodes' views do not change.
TEST_F(InspectGoldenTest, ScaledMemoryShowsVirtualAndPhysical) {
  Json inventory = Inventory("GPU-s", 2, "SimGPU-24G", 24576);
  inventory["gpus"][0]["memoryScaling"] = 2;
  inventory["gpus"][1]["memoryScaling"] = 2;
  AddNode("gpu-s", inventory.dump());
  for (const char* name : {"half-a", "half-b"}) {
    Bound("default", name, "gpu-s", "Running",
          {{{"name", "main"}, {"mode", "hard"}, {"devices", {Device("GPU-s0", 20480, 0)}}}});
  }
  InspectRun plain = InspectApi({"gpu-s", "-d"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  ExpectGolden("scaled_memory", plain.out);
  InspectRun bars = InspectApi({"gpu-s"}, /*terminal=*/true);
  ASSERT_EQ(bars.code, 0) << bars.err;
  ExpectGolden("scaled_memory_bars", bars.out);
  InspectRun gib = InspectApi({"gpu-s", "-o", "gib"});
  ASSERT_EQ(gib.code, 0) << gib.err;
  ExpectGolden("scaled_memory_gib", gib.out);
  InspectRun json = InspectApi({"gpu-s", "-o", "json"});
  ASSERT_EQ(json.code, 0) << json.err;
  ExpectGolden("scaled_memory_json", json.out);
}

TEST_F(InspectGoldenTest, BarChartOnATerminal) {
  InspectRun run = InspectApi({"gpu-b"}, /*terminal=*/true);
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("bars", run.out);
  InspectRun never = InspectApi({"gpu-b", "--inspect.chart", "never"}, /*terminal=*/true);
  EXPECT_EQ(never.out.find("[####"), std::string::npos) << never.out;
  InspectRun piped = InspectApi({"gpu-b"}, /*terminal=*/false);
  EXPECT_EQ(piped.out.find("[####"), std::string::npos) << piped.out;
}

TEST_F(InspectGoldenTest, UnknownNodeSaysWhatExists) {
  InspectRun run = InspectApi({"gpu-c"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err,
            "tessera inspect: node \"gpu-c\" not found; did you mean \"gpu-a\"? Tessera GPU "
            "nodes: gpu-a, gpu-b, gpu-broken\n");
}

TEST_F(InspectGoldenTest, NodeWithoutGpusSaysWhy) {
  InspectRun run = InspectApi({"cpu-1"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("node \"cpu-1\" has no tessera.io/gpus annotation"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("tessera.io/enabled=true"), std::string::npos) << run.err;
}

TEST_F(InspectGoldenTest, TwoNodeNamesAreRefused) {
  InspectRun run = InspectApi({"gpu-a", "gpu-b"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("at most one node name"), std::string::npos) << run.err;
}

TEST(InspectErrors, UnreachableApiServerSaysWhatToDo) {
  auto server = testing::FakeApiServer::Start({});
  ASSERT_TRUE(server.ok());
  std::string url = (*server)->url();
  (*server)->Stop();
  InspectRun run = Inspect({"--kubeconfig", Kubeconfig(url), "--kube.timeout", "5s"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("cannot reach the API server"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--scheduler URL"), std::string::npos) << run.err;
}

// A tiny HTTP server that answers GET /inspect with a canned body.
class CannedScheduler {
 public:
  explicit CannedScheduler(std::string body) : body_(std::move(body)) {
    server_.Get("/inspect", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(body_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() only ends a server that runs: wait (bounded) until the thread serves.
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~CannedScheduler() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string body_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(InspectScheduler, ReadsTheSchedulersInspectAnswer) {
  CannedScheduler scheduler(
      ReadFile(std::string(TESSERA_INSPECT_TESTDATA) + "/scheduler_inspect.json"));
  InspectRun run = Inspect({"--scheduler", scheduler.url(), "-d"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("scheduler_details", run.out);

  InspectRun node = Inspect({"--scheduler", scheduler.url() + "/", "node-2", "-o", "json"});
  ASSERT_EQ(node.code, 0) << node.err;
  ExpectGolden("scheduler_node_json", node.out);
}

TEST(InspectScheduler, NamespaceFiltersTheSchedulersPods) {
  CannedScheduler scheduler(
      ReadFile(std::string(TESSERA_INSPECT_TESTDATA) + "/scheduler_inspect.json"));
  const std::string totals = "jsonpath={.totals.pods} {.totals.usedMiB} {.pending[*].pod}";
  InspectRun all = Inspect({"--scheduler", scheduler.url(), "-o", totals});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out, "3 156672 default/huge");
  InspectRun ml = Inspect({"--scheduler", scheduler.url(), "-n", "ml", "-o", totals});
  ASSERT_EQ(ml.code, 0) << ml.err;
  EXPECT_EQ(ml.out, "1 144384 ");
}

// Issue 36: a scheduler that counts namespace GPU quotas gives them in /inspect; the text views
// list them after the totals, json and yaml carry them as the scheduler gives them, -n keeps the
// namespace's. A scheduler without the field (the canned answer above) shows no Quotas section.
TEST(InspectScheduler, ShowsTheNamespacesGpuQuotas) {
  Json doc =
      Json::parse(ReadFile(std::string(TESSERA_INSPECT_TESTDATA) + "/scheduler_inspect.json"));
  const Json quotas = Json::parse(R"([
      {"namespace":"ml","name":"gpu-quota","limits":{"memoryBytes":10737418240},
       "used":{"memoryBytes":6442450944,"cores":130}},
      {"namespace":"ml","name":"compute","limits":{"cores":200},
       "used":{"memoryBytes":6442450944,"cores":130}},
      {"namespace":"default","name":"team","limits":{"memoryBytes":42949672960,"cores":400},
       "used":{"memoryBytes":0,"cores":0}}])");
  doc["quotas"] = quotas;
  CannedScheduler scheduler(doc.dump());
  InspectRun run = Inspect({"--scheduler", scheduler.url()});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectGolden("scheduler_quotas", run.out);
  InspectRun gib = Inspect({"--scheduler", scheduler.url(), "-o", "gib"});
  ASSERT_EQ(gib.code, 0) << gib.err;
  EXPECT_NE(gib.out.find("\nQuotas:\n  default (ResourceQuota team): memory 0 GiB of 40 GiB (0%), "
                         "compute 0% of 400% of a GPU (0%)\n"),
            std::string::npos)
      << gib.out;

  InspectRun json = Inspect({"--scheduler", scheduler.url(), "-o", "json"});
  ASSERT_EQ(json.code, 0) << json.err;
  // Sorted by namespace and name, otherwise as the scheduler gave them.
  EXPECT_EQ(Json::parse(json.out)["quotas"], Json({quotas[2], quotas[1], quotas[0]}));
  InspectRun yaml = Inspect({"--scheduler", scheduler.url(), "-n", "ml", "-o", "yaml"});
  ASSERT_EQ(yaml.code, 0) << yaml.err;
  ExpectGolden("scheduler_quotas_ml_yaml", yaml.out);
  InspectRun ml = Inspect({"--scheduler", scheduler.url(), "-n", "ml", "-o",
                           "jsonpath={range .quotas[*]}{.name}={.used.cores} {end}"});
  ASSERT_EQ(ml.code, 0) << ml.err;
  EXPECT_EQ(ml.out, "compute=130 gpu-quota=130 ");

  CannedScheduler before_issue_36(
      ReadFile(std::string(TESSERA_INSPECT_TESTDATA) + "/scheduler_inspect.json"));
  InspectRun old = Inspect({"--scheduler", before_issue_36.url()});
  ASSERT_EQ(old.code, 0) << old.err;
  EXPECT_EQ(old.out.find("Quotas"), std::string::npos) << old.out;
}

TEST(InspectScheduler, MalformedQuotasAreReported) {
  Json doc =
      Json::parse(ReadFile(std::string(TESSERA_INSPECT_TESTDATA) + "/scheduler_inspect.json"));
  doc["quotas"] = Json::parse(R"([{"namespace":"ml","name":"q","limits":{"memoryBytes":"10Gi"}}])");
  CannedScheduler scheduler(doc.dump());
  InspectRun run = Inspect({"--scheduler", scheduler.url()});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "tessera inspect: the scheduler's /inspect answer is not in the expected format: "
            "quota ml/q: \"memoryBytes\" is not an integer\n");
}

TEST(InspectScheduler, MalformedAnswerIsReported) {
  CannedScheduler scheduler("{\"nodes\": 3}");
  InspectRun run = Inspect({"--scheduler", scheduler.url()});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "tessera inspect: the scheduler's /inspect answer is not in the expected format: "
            "\"nodes\" is missing or not a list\n");
}

TEST(InspectScheduler, UnreachableSchedulerSaysWhatToDo) {
  int port = 0;
  {
    CannedScheduler gone("{}");
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  InspectRun run = Inspect({"--scheduler", "http://127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("cannot reach the Tessera scheduler at http://127.0.0.1:"),
            std::string::npos)
      << run.err;
  InspectRun bad = Inspect({"--scheduler", "tessera-scheduler:8443"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("give the scheduler's URL with its scheme"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tessera::inspect
