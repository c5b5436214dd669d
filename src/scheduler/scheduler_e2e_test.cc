// End-to-end: the scheduler app (informers, extender, Binding) against the fake API server
// (testing/fakeapiserver), driven over HTTP the way kube-scheduler drives an extender.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "annotations/names.h"
#include "fakeapiserver/fake_api_server.h"
#include "fakeapiserver/keep_alive_probe.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "scheduler/extender_driver.h"
#include "scheduler/mixed_cluster_for_test.h"
#include "scheduler/resize.h"
#include "scheduler/scheduler_app.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::Driver;
using testing::ExpectNoGpuOverAllocated;
using testing::MakePod;
using testing::MakeUniformNode;
using testing::Resources;

// A TCP port that was free a moment ago (for a server whose address must be known in advance).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

class SchedulerE2E : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(); }
  void TearDown() override { app_.reset(); }

  // A fresh, empty API server and a client of it (no client-side rate limit: the tests are
  // bursts of hundreds of calls).
  void StartServer(const tessera::testing::FakeApiServer::Options& options = {}) {
    app_.reset();
    client_.reset();
    server_.reset();
    auto server = tessera::testing::FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto client = kube::Client::Create({.server = server_->url()}, {.qps = 0});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  // A new scheduler process: the old one (if any) stops first, the new one lists everything.
  void StartApp(const std::string& listen = "127.0.0.1:0", DraMode dra = DraMode::kOff) {
    app_.reset();
    AppOptions options;
    options.server.listen = listen;
    options.dra = dra;
    options.read_access = ReadAccess::kOpen;  // the tests read /inspect without a token
    app_ = std::make_unique<SchedulerApp>(*client_, options);
    ASSERT_TRUE(app_->Start().ok());
    ASSERT_TRUE(app_->WaitForSync(std::chrono::seconds(30)));
  }

  std::vector<json> ListPods() {
    Result<kube::ObjectList> pods = client_->List(kube::kPods, {});
    EXPECT_TRUE(pods.ok()) << pods.status().ToString();
    return pods.ok() ? pods->items : std::vector<json>();
  }
  // True once every bind's reservation has been confirmed by the pod watch.
  bool AllReservationsConfirmed() {
    for (auto& [key, p] : app_->state().Snapshot().pods) {
      if (p.reserved) return false;
    }
    return true;
  }

  json Create(const kube::Resource& resource, json object) {
    object["metadata"].erase("uid");
    std::string ns = resource.namespaced ? "default" : "";
    Result<json> created = client_->Create(resource, ns, object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }
  json CreatePod(const json& pod) { return Create(kube::kPods, pod); }
  json GetPod(const std::string& name) {
    Result<json> pod = client_->Get(kube::kPods, "default", name);
    EXPECT_TRUE(pod.ok()) << pod.status().ToString();
    return pod.ok() ? *pod : json();
  }
  void DeletePod(const std::string& name) {
    Status s = client_->Delete(kube::kPods, "default", name);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Polls `done` every 10 ms for up to 30 s (the informers deliver asynchronously).
  template <typename F>
  bool WaitFor(F done) {
    for (int i = 0; i < 3000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  uint64_t UsedMib(const std::string& node) {
    StateSnapshot s = app_->state().Snapshot();
    uint64_t used = 0;
    for (const GpuSlot& g : s.nodes[node].gpus) used += g.used_mib;
    return used;
  }

  std::unique_ptr<tessera::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<SchedulerApp> app_;
};

json MixedPod(int i, std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Resources r;
  switch (i % 3) {
    case 0:
      r = {{"nvidia.com/gpu", pick(1, 2)},
           {"nvidia.com/gpumem", pick(1, 6) * 1000},
           {"nvidia.com/gpucores", pick(0, 3) * 10}};
      break;
    case 1:
      r = {{"tencent.com/vcuda-core", pick(1, 5) * 10}, {"tencent.com/vcuda-memory", pick(4, 30)}};
      break;
    default:
      r = {{"aliyun.com/gpu-mem", pick(1, 6)}};
  }
  return MakePod("pod-" + std::to_string(i), r);
}

TEST_F(SchedulerE2E, BindsThroughTheApiServerFreesOnDeleteAndRestartRebuildsTheSameState) {
  std::vector<std::string> nodes = {"t4", "a100", "rtx-a", "rtx-b"};
  Create(kube::kNodes, MakeUniformNode("t4", 4, "Tesla T4", 15360));
  Create(kube::kNodes, MakeUniformNode("a100", 2, "A100-SXM4-40GB", 40960));
  Create(kube::kNodes, MakeUniformNode("rtx-a", 8, "SimGPU-3090", 24268));
  Create(kube::kNodes, MakeUniformNode("rtx-b", 8, "SimGPU-3090", 24268));
  StartApp();
  ASSERT_EQ(app_->state().NodeCount(), 4u);

  std::mt19937 rng(3);
  std::map<std::string, std::string> placed;
  for (int i = 0; i < 60; ++i) {
    json pod = CreatePod(MixedPod(i, rng));
    std::string node = Driver(app_->port()).Schedule(pod, nodes);
    ASSERT_EQ(node.find("bind failed"), std::string::npos) << node;
    if (!node.empty()) placed[pod["metadata"]["name"]] = node;
  }
  EXPECT_GT(placed.size(), 40u);
  // Every Binding reached the API server with its decision, and the watch confirmed it.
  std::map<std::string, uint64_t> per_gpu;
  for (auto& [name, node] : placed) {
    json pod = GetPod(name);
    EXPECT_EQ(pod["spec"]["nodeName"], node);
    Result<Allocation> a =
        ParseAllocation(pod["metadata"]["annotations"]["tessera.io/allocation"].get<std::string>());
    ASSERT_TRUE(a.ok()) << name;
    for (const GpuCharge& c : ChargesOf(*a)) per_gpu[c.uuid] += c.memory_mib;
  }
  for (auto& [uuid, mib] : per_gpu) {
    uint64_t total = uuid.rfind("t4", 0) == 0 ? 15360 : uuid.rfind("a100", 0) == 0 ? 40960 : 24268;
    EXPECT_LE(mib, total) << uuid;
  }
  ASSERT_TRUE(WaitFor([&] { return AllReservationsConfirmed(); }));

  // Restart: the new process rebuilds exactly the same usage from the API server.
  StateSnapshot before = app_->state().Snapshot();
  StartApp();
  EXPECT_EQ(app_->state().Snapshot().nodes, before.nodes);

  // Deleted and Succeeded pods free their GPUs.
  std::string victim = placed.begin()->first;
  std::string victim_node = placed.begin()->second;
  uint64_t used = UsedMib(victim_node);
  DeletePod(victim);
  ASSERT_TRUE(WaitFor([&] { return UsedMib(victim_node) < used; }));
  std::string done = std::next(placed.begin())->first;
  std::string done_node = std::next(placed.begin())->second;
  used = UsedMib(done_node);
  ASSERT_TRUE(client_->PatchStatus(kube::kPods, "default", done, {{"phase", "Succeeded"}}).ok());
  ASSERT_TRUE(WaitFor([&] { return UsedMib(done_node) < used; }));

  // A Binding the API server refuses (the pod is gone) leaves no reservation behind.
  json ghost = CreatePod(MakePod("ghost", {{"aliyun.com/gpu-mem", 1}}));
  Driver d(app_->port());
  json f =
      d.Post("/filter", json{{"Pod", ghost}, {"NodeNames", {"t4"}}, {"Nodes", nullptr}}.dump());
  ASSERT_EQ(f["NodeNames"], json({"t4"}));
  DeletePod("ghost");
  used = UsedMib("t4");
  json b = d.Post("/bind", json{{"PodName", "ghost"},
                                {"PodNamespace", "default"},
                                {"PodUID", ghost["metadata"]["uid"]},
                                {"Node", "t4"}}
                               .dump());
  EXPECT_FALSE(b["Error"].get<std::string>().empty());
  EXPECT_EQ(UsedMib("t4"), used);
}

// kube-scheduler's calls for 200 pods of every dialect onto 10 nodes of three GPU models, with
// each Binding posted to the API server. Run A keeps one scheduler; run B restarts it after 100
// pods, and the new one learns everything from the API server. The decisions are the same, and
// the decisions on the API server never exceed any GPU.
TEST_F(SchedulerE2E, TwoHundredMixedPodsOntoTenNodesAndARestartMidwayChangesNoDecision) {
  const std::vector<std::string> nodes = testing::TenMixedNodeNames();
  std::map<std::string, std::string> decisions[2];
  for (int run = 0; run < 2; ++run) {
    StartServer();
    for (const json& node : testing::TenMixedNodes()) Create(kube::kNodes, node);
    StartApp();
    ASSERT_EQ(app_->state().NodeCount(), 10u);
    std::mt19937 rng(42);
    for (int i = 0; i < 200; ++i) {
      if (run == 1 && i == 100) {
        StateSnapshot before = app_->state().Snapshot();
        StartApp();
        EXPECT_EQ(app_->state().Snapshot().nodes, before.nodes)
            << "the restarted scheduler rebuilds the same usage from the API server";
      }
      json pod = CreatePod(testing::RandomPod(i, rng));
      decisions[run][pod["metadata"]["name"]] = Driver(app_->port()).Schedule(pod, nodes);
    }
    int bound = 0;
    for (auto& [name, node] : decisions[run]) {
      EXPECT_EQ(node.find("bind failed"), std::string::npos) << name << ": " << node;
      bound += !node.empty();
    }
    EXPECT_GT(bound, 100) << "most of the pods find room";
    std::vector<json> pods = ListPods();
    ExpectNoGpuOverAllocated(pods);
    for (const json& pod : pods) {
      EXPECT_EQ(pod["spec"].value("nodeName", ""), decisions[run][pod["metadata"]["name"]])
          << "the API server holds the decision of " << pod["metadata"]["name"];
    }
  }
  EXPECT_EQ(decisions[0], decisions[1]);
}

// 64 binds at once to one node, each posting its Binding to the API server: exactly as many as
// the GPUs hold succeed, the rest are refused, and the API server's pods never over-allocate.
TEST_F(SchedulerE2E, SixtyFourConcurrentBindsToOneNodeNeverOverAllocate) {
  Create(kube::kNodes, MakeUniformNode("n", 2, "A100", 40960));
  StartApp();
  constexpr int kPods = 64;
  std::vector<json> pods;
  for (int i = 0; i < kPods; ++i) {
    pods.push_back(CreatePod(MakePod("p" + std::to_string(i), {{"nvidia.com/gpumem", 2048}})));
    json args = {{"Pod", pods.back()}, {"Nodes", nullptr}, {"NodeNames", {"n"}}};
    json f = Driver(app_->port()).Post("/filter", args.dump());
    ASSERT_EQ(f["NodeNames"], json({"n"}));
  }
  std::atomic<int> bound{0}, refused{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (const json& pod : pods) {
    threads.emplace_back([&, pod] {
      Driver d(app_->port());
      while (!go.load()) std::this_thread::yield();
      json r = d.Post("/bind", json{{"PodName", pod["metadata"]["name"]},
                                    {"PodNamespace", "default"},
                                    {"PodUID", pod["metadata"]["uid"]},
                                    {"Node", "n"}}
                                   .dump());
      std::string error = r.is_object() ? r.value("Error", "?") : "?";
      if (error.empty()) {
        bound.fetch_add(1);
      } else if (error.find("does not fit node n") != std::string::npos) {
        refused.fetch_add(1);
      } else {
        ADD_FAILURE() << "unexpected bind answer: " << r.dump();
      }
    });
  }
  go.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bound.load(), 40);  // 20 x 2048 MiB per 40960 MiB GPU
  EXPECT_EQ(refused.load(), kPods - 40);

  std::map<std::string, uint64_t> per_gpu;
  int on_node = 0;
  for (const json& pod : ListPods()) {
    if (!pod["spec"].contains("nodeName")) continue;
    ++on_node;
    Result<Allocation> a =
        ParseAllocation(pod["metadata"]["annotations"][kAllocationAnnotation].get<std::string>());
    ASSERT_TRUE(a.ok());
    for (const GpuCharge& c : ChargesOf(*a)) per_gpu[c.uuid] += c.memory_mib;
  }
  EXPECT_EQ(on_node, 40);
  EXPECT_EQ(per_gpu, (std::map<std::string, uint64_t>{{"n-gpu0", 40960}, {"n-gpu1", 40960}}));
  ASSERT_TRUE(WaitFor([&] { return AllReservationsConfirmed(); }));
  const StateSnapshot snapshot = app_->state().Snapshot();  // alive while iterating its GPUs
  for (const GpuSlot& g : snapshot.nodes.at("n").gpus) {
    EXPECT_EQ(g.used_mib, 40960u);
    EXPECT_EQ(g.pods, 20);
  }
  StartApp();
  EXPECT_EQ(app_->state().Snapshot().nodes, snapshot.nodes);
}

// The API server sends every new pod through the scheduler's admission webhook, as a cluster
// with deploy/webhook does: GPU pods get schedulerName tessera, invalid ones are refused with the
// webhook's message, opted-out and GPU-less pods pass untouched; a mutated pod then schedules.
TEST_F(SchedulerE2E, AdmissionWebhookThroughTheApiServerAllowsDeniesAndPatches) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  StartServer({.admission_webhook = "http://127.0.0.1:" + std::to_string(port)});
  Create(kube::kNodes, MakeUniformNode("n", 4, "Tesla T4", 15360));
  StartApp("127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(app_->port(), port);

  json gpu = CreatePod(MakePod("gpu", {{"aliyun.com/gpu-mem", 2}}));
  EXPECT_EQ(gpu["spec"]["schedulerName"], "tessera");
  EXPECT_EQ(GetPod("gpu")["spec"]["schedulerName"], "tessera");

  struct Deny {
    const char* name;
    Resources limits;
    const char* message;
  } denials[] = {
      {"core-150", {{"tencent.com/vcuda-core", 150}}, "150 is not allowed: use a value below 100"},
      {"percent-120",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 120}},
       "outside 1..100"},
      {"negative", {{"nvidia.com/gpu", "-1"}}, "negative"},
      {"fraction", {{"aliyun.com/gpu-mem", "1.5"}}, "not a whole number"},
      {"five-gpus", {{"nvidia.com/gpu", 5}}, "asks for 5 GPUs, but the largest node has 4"},
      {"mixed", {{"nvidia.com/gpu", 1}, {"aliyun.com/gpu-mem", 1}}, "mixes dialects"},
  };
  for (const Deny& c : denials) {
    json pod = MakePod(c.name, c.limits);
    pod["metadata"].erase("uid");
    Result<json> created = client_->Create(kube::kPods, "default", pod);
    ASSERT_FALSE(created.ok()) << c.name << " was admitted";
    kube::ApiError details = kube::ErrorDetails(created.status());
    EXPECT_EQ(details.http_status, 403) << c.name;
    EXPECT_NE(details.message.find("admission webhook \"mutate.tessera.io\" denied the request"),
              std::string::npos)
        << details.message;
    EXPECT_NE(details.message.find(c.message), std::string::npos) << details.message;
    EXPECT_EQ(client_->Get(kube::kPods, "default", c.name).status().code(), StatusCode::kNotFound)
        << c.name << " must not be stored";
  }

  json opted = MakePod("opted-out", {{"tencent.com/vcuda-core", 150}});
  opted["metadata"]["labels"]["tessera.io/webhook"] = "ignore";
  EXPECT_FALSE(CreatePod(opted)["spec"].contains("schedulerName"));
  EXPECT_FALSE(CreatePod(MakePod("cpu-only", {{"cpu", "1"}}))["spec"].contains("schedulerName"));

  EXPECT_EQ(Driver(app_->port()).Schedule(gpu, {"n"}), "n");
  EXPECT_EQ(GetPod("gpu")["spec"]["nodeName"], "n");
}

// Namespace GPU quotas through the API server (docs/quotas.md): with a ResourceQuota of 10 GiB on
// requests.tessera.io/gpu-memory, a vGPU pod of 6 GiB is stored and a vcuda pod of 24 units
// (6 GiB) is refused by /validate with what is used, asked and allowed; once the first pod is
// deleted the second fits.
TEST_F(SchedulerE2E, GpuQuotaAdmitsSixGiBOfVgpuAndRefusesSixGiBOfVcuda) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  StartServer({.admission_webhook = "http://127.0.0.1:" + std::to_string(port)});
  Create(kube::kNodes, MakeUniformNode("n", 4, "Tesla T4", 15360));
  Create(kube::kResourceQuotas,
         {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", "gpu-quota"}, {"namespace", "default"}}},
          {"spec", {{"hard", {{"requests.tessera.io/gpu-memory", "10Gi"}}}}}});
  StartApp("127.0.0.1:" + std::to_string(port));

  CreatePod(MakePod("vgpu", {{"nvidia.com/gpumem", 6144}}));
  json vcuda = MakePod("vcuda", {{"tencent.com/vcuda-memory", 24}});
  vcuda["metadata"].erase("uid");
  Result<json> created = client_->Create(kube::kPods, "default", vcuda);
  ASSERT_FALSE(created.ok()) << "the vcuda pod was admitted past the quota";
  kube::ApiError details = kube::ErrorDetails(created.status());
  EXPECT_EQ(details.http_status, 403);
  EXPECT_NE(details.message.find(
                "admission webhook \"validate.tessera.io\" denied the request: Tessera: namespace "
                "default: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 6 GiB used, 6 GiB "
                "asked (container \"main\": vcuda tencent.com/vcuda-memory: 24 = 1 GPU x 6144 "
                "MiB), 4 GiB left"),
            std::string::npos)
      << details.message;

  // The namespace's quota and usage in /inspect and /metrics: the vGPU pod's 6 GiB, and 100% of a
  // GPU's compute, since it sets no compute limit; the refused pod counts nothing.
  httplib::Client scheduler("127.0.0.1", app_->port());
  httplib::Result inspect = scheduler.Get("/inspect");
  ASSERT_TRUE(inspect && inspect->status == 200);
  EXPECT_EQ(json::parse(inspect->body)["quotas"], json::parse(R"([{"namespace":"default",
      "name":"gpu-quota","limits":{"memoryBytes":10737418240},
      "used":{"memoryBytes":6442450944,"cores":100}}])"));
  httplib::Result metrics = scheduler.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  for (const char* line :
       {"\ntessera_namespace_gpu_memory_quota_bytes{namespace=\"default\","
        "resourcequota=\"gpu-quota\"} 10737418240\n",
        "\ntessera_namespace_gpu_memory_used_bytes{namespace=\"default\"} 6442450944\n",
        "\ntessera_namespace_gpu_cores_used_percent{namespace=\"default\"} 100\n"}) {
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line << " is not in\n"
                                                           << metrics->body;
  }
  EXPECT_EQ(metrics->body.find("tessera_namespace_gpu_cores_quota_percent{"), std::string::npos)
      << "a quota without a compute limit gives no compute series";

  DeletePod("vgpu");
  EXPECT_TRUE(WaitFor([&] {
    json pod = vcuda;
    return client_->Create(kube::kPods, "default", pod).ok();
  })) << "the quota freed by the deleted pod is never seen";
}

// The webhook's DRA mode through the API server: the pod is stored with its claim instead of its
// extended resources, the template it names is created in its namespace, and a second pod of the
// same shape is admitted with the template that exists (AlreadyExists is no error).
TEST_F(SchedulerE2E, DraModeStoresThePodWithItsClaimAndCreatesItsTemplate) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  StartServer({.admission_webhook = "http://127.0.0.1:" + std::to_string(port)});
  StartApp("127.0.0.1:" + std::to_string(port), DraMode::kOn);
  Resources limits = {
      {"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 4096}, {"nvidia.com/gpucores", 25}};
  for (const char* name : {"dra-1", "dra-2"}) {
    json pod = CreatePod(MakePod(name, limits));
    EXPECT_FALSE(pod["spec"].contains("schedulerName")) << name << ": not for the extender";
    EXPECT_EQ(pod["spec"]["resourceClaims"], json::parse(R"([
      {"name":"main-gpu","resourceClaimTemplateName":"tessera-gpu-1x4096mi-25c"}])"));
    EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
              json::parse(R"({"limits":{},"claims":[{"name":"main-gpu"}]})"));
  }
  Result<json> made =
      client_->Get(kube::kResourceClaimTemplates, "default", "tessera-gpu-1x4096mi-25c");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"],
            json::parse(R"({"requests":{"memory":"4096Mi","cores":"25"}})"));
  Result<kube::ObjectList> all = client_->List(kube::kResourceClaimTemplates, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 1u);
}

// Before, a pod owner could free their own charge by annotating the running pod
// (allocation-failed=x, a rewritten allocation), and create a pod with a hand-written decision;
// the API server now sends those updates to /validate, which refuses them.
TEST_F(SchedulerE2E, PodOwnerCannotForgeTesseraAnnotationsThroughTheApiServer) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  StartServer({.admission_webhook = "http://127.0.0.1:" + std::to_string(port)});
  Create(kube::kNodes, MakeUniformNode("n", 4, "Tesla T4", 15360));
  StartApp("127.0.0.1:" + std::to_string(port));
  json gpu = CreatePod(MakePod("gpu", {{"aliyun.com/gpu-mem", 2}}));
  ASSERT_EQ(Driver(app_->port()).Schedule(gpu, {"n"}), "n");
  httplib::Client api(server_->url());
  auto annotate = [&](const std::string& user, const json& annotations) {
    json body = {{"metadata", {{"annotations", annotations}}}};
    return api.Patch("/api/v1/namespaces/default/pods/gpu", {{"Impersonate-User", user}},
                     body.dump(), "application/merge-patch+json");
  };
  httplib::Result r = annotate("alice", {{"tessera.io/allocation-failed", "x"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(json::parse(r->body)["message"].get<std::string>().find(
                "admission webhook \"validate.tessera.io\" denied the request: Tessera: "
                "user \"alice\" may not set tessera.io/allocation-failed"),
            std::string::npos)
      << r->body;
  r = annotate("alice", {{"tessera.io/allocation", R"({"version":1,"containers":[]})"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_FALSE(GetPod("gpu")["metadata"]["annotations"].contains("tessera.io/allocation-failed"));

  // The node agent may record its verdict; the owner may change everything else.
  r = annotate("system:serviceaccount:tessera-system:tessera-node",
               {{"tessera.io/allocated", "{}"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = annotate("alice", {{"team", "a"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;

  json forged = MakePod("forged", {{"aliyun.com/gpu-mem", 2}});
  forged["metadata"].erase("uid");
  forged["metadata"]["annotations"]["tessera.io/allocation"] =
      GetPod("gpu")["metadata"]["annotations"]["tessera.io/allocation"];
  Result<json> created = client_->Create(kube::kPods, "default", forged);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(kube::ErrorDetails(created.status())
                .message.find("a new pod may not carry tessera.io/allocation"),
            std::string::npos)
      << created.status().message();
}

// kube-scheduler keeps its connections to the extender: answers on a reused connection must not
// wait for the client's delayed ACK (~40 ms each without TCP_NODELAY), or every filter would.
TEST_F(SchedulerE2E, KeepAliveAnswersDoNotWaitForDelayedAcks) {
  Create(kube::kNodes, MakeUniformNode("n", 1, "Tesla T4", 15360));
  StartApp();
  for (const char* path : {"/healthz", "/inspect", "/metrics"}) {
    std::vector<double> ms = tessera::testing::KeepAliveAnswerMillis(app_->port(), path);
    ASSERT_EQ(ms.size(), 9u) << path << ": the server closed a connection early";
    EXPECT_LT(ms[ms.size() / 2], 20.0)
        << path << ": median of " << ms.size() << " answers, slowest " << ms.back() << " ms";
  }
}

// Resizing a running container through the API server (docs/resize.md): the user (alice, through
// the webhook's UPDATE review) asks in tessera.io/resize what `kubectl tessera resize` writes; the
// scheduler grants a growth that fits with a new decision and refuses one that does not with the
// filter's reason, each with an Event; a restart right after a request answers it once, and a
// restart rebuilds the resized usage and answers nothing twice.
TEST_F(SchedulerE2E, ResizeGrantsAGrowthRefusesOneThatDoesNotFitAndSurvivesRestarts) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  StartServer({.admission_webhook = "http://127.0.0.1:" + std::to_string(port)});
  auto as = [&](const std::string& user) {
    auto c =
        kube::Client::Create({.server = server_->url(), .impersonate = {.user = user}}, {.qps = 0});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  };
  client_ = as(DefaultTrustedUsers()[0]);  // the scheduler's service account
  std::unique_ptr<kube::Client> alice = as("alice");
  Create(kube::kNodes, MakeUniformNode("n", 1, "L4", 24000));
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  StartApp(listen);
  for (const auto& [name, mib] : {std::pair{"small", 4096}, std::pair{"big", 12000}}) {
    CreatePod(MakePod(name, {{"nvidia.com/gpumem", mib}, {"nvidia.com/gpucores", 30}}));
    ASSERT_EQ(Driver(app_->port()).Schedule(GetPod(name), {"n"}), "n");
  }
  ASSERT_TRUE(WaitFor([&] { return AllReservationsConfirmed() && UsedMib("n") == 16096; }));

  auto ask = [&](const std::string& id, uint64_t mib) {
    kube::StringMapChanges changes;
    changes[annotations::kResize] =
        ResizeRequestToJson({.id = id, .container = "main", .memory_mib = mib});
    return alice->PatchAnnotations(kube::kPods, "default", "small", changes);
  };
  auto answer = [&](const std::string& id) -> std::optional<ResizeStatus> {
    json pod = GetPod("small");
    const json& a = pod["metadata"]["annotations"];
    if (!a.contains(annotations::kResizeStatus)) return std::nullopt;
    ResizeStatus s = *ParseResizeStatus(a[annotations::kResizeStatus].get<std::string>());
    return s.id == id ? std::optional<ResizeStatus>(s) : std::nullopt;
  };
  auto events = [&] {
    std::vector<std::string> out;
    Result<kube::ObjectList> list = client_->List(kube::kEvents, {.ns = "default"});
    for (const json& e : list.ok() ? list->items : std::vector<json>()) {
      if (e["involvedObject"].value("name", "") == "small") {
        out.push_back(e.value("reason", "") + ": " + e.value("message", ""));
      }
    }
    return out;
  };

  // 4096 -> 8192 MiB: 7904 MiB are free beside it.
  ASSERT_TRUE(ask("grow", 8192).ok());
  ASSERT_TRUE(WaitFor([&] { return answer("grow").has_value(); }));
  EXPECT_TRUE(answer("grow")->granted) << answer("grow")->message;
  Allocation decided = *ParseAllocation(
      GetPod("small")["metadata"]["annotations"][kAllocationAnnotation].get<std::string>());
  EXPECT_EQ(decided.containers[0].devices[0].memory_mib, 8192u);
  EXPECT_EQ(decided.containers[0].devices[0].uuid, "n-gpu0");
  EXPECT_EQ(UsedMib("n"), 12000u + 8192u);
  // /inspect (and the web page and kubectl tessera inspect, which read it) shows the new size.
  httplib::Client scheduler("127.0.0.1", app_->port());
  httplib::Result inspect = scheduler.Get("/inspect");
  ASSERT_TRUE(inspect && inspect->status == 200);
  for (const json& a : json::parse(inspect->body)["allocations"]) {
    if (a["pod"] != "default/small") continue;
    EXPECT_EQ(a["allocation"]["containers"][0]["devices"][0]["memoryMiB"], 8192);
    EXPECT_EQ(a["allocation"]["containers"][0]["resized"], true);
  }
  // The pod's resources stay as the user wrote them.
  EXPECT_EQ(GetPod("small")["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"],
            4096);

  // 8192 -> 16000: only 12000 can be had there.
  ASSERT_TRUE(ask("too-big", 16000).ok());
  ASSERT_TRUE(WaitFor([&] { return answer("too-big").has_value(); }));
  EXPECT_FALSE(answer("too-big")->granted);
  EXPECT_EQ(answer("too-big")->message,
            "container \"main\": insufficient GPU memory: need 16000 MiB on 1 GPU, largest free "
            "12000 MiB (GPU 0, L4)");
  ASSERT_TRUE(WaitFor([&] { return events().size() == 2; }));
  EXPECT_EQ(events()[0].rfind("Resized: Tessera: resize grow: ", 0), 0u) << events()[0];
  EXPECT_EQ(events()[1].rfind("ResizeRefused: Tessera: resize too-big: container", 0), 0u)
      << events()[1];

  // What the webhook refuses at once, and what only Tessera may write.
  Result<json> bad = ask("bad", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(kube::ErrorDetails(bad.status()).message.find("\"memoryMiB\" 0 is not allowed"),
            std::string::npos);
  kube::StringMapChanges forged;
  forged[annotations::kResizeStatus] = ResizeStatusToJson({.id = "x", .granted = true});
  EXPECT_FALSE(alice->PatchAnnotations(kube::kPods, "default", "small", forged).ok());

  // A scheduler stopped right after a request (answered or not) and started again: the request
  // is answered once, with one Event; a further restart has the resized usage and writes nothing.
  ASSERT_TRUE(ask("shrink", 2048).ok());
  StartApp(listen);
  ASSERT_TRUE(WaitFor([&] { return answer("shrink").has_value(); }));
  EXPECT_TRUE(answer("shrink")->granted);
  ASSERT_TRUE(WaitFor([&] { return UsedMib("n") == 12000u + 2048u; }));
  ASSERT_TRUE(WaitFor([&] { return events().size() == 3; }));
  const std::string version_before = GetPod("small")["metadata"]["resourceVersion"];
  StartApp(listen);
  ASSERT_TRUE(WaitFor([&] { return UsedMib("n") == 12000u + 2048u; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(events().size(), 3u);
  EXPECT_EQ(GetPod("small")["metadata"]["resourceVersion"], version_before);
  EXPECT_EQ(answer("shrink")->memory_mib, 2048u);
}

}  // namespace
}  // namespace tessera::scheduler
