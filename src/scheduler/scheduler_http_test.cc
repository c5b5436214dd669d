// End-to-end tests of the scheduler over HTTP: a driver calls filter, prioritize and bind the way
// kube-scheduler does (PascalCase JSON, nulls), against an in-memory API server stand-in that
// applies each Binding to its pod and plays the update back as a watch event.
#include <httplib.h>

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "common/strings.h"
#include "scheduler/binder.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/extender_driver.h"
#include "scheduler/http_server.h"
#include "scheduler/mixed_cluster_for_test.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::Driver;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeUniformNode;
using testing::Resources;

// The API server's objects, and the Binding subresource.
class FakeApi : public Binder {
 public:
  void AddNode(const json& node) {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_[node["metadata"]["name"]] = node;
  }
  void PutPod(const json& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    pods_["default/" + pod["metadata"]["name"].get<std::string>()] = pod;
  }
  json Pod(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return pods_.at("default/" + name);
  }
  void ErasePod(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    pods_.erase("default/" + name);
  }
  std::vector<json> Pods() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<json> out;
    for (auto& [k, p] : pods_) out.push_back(p);
    return out;
  }
  // Replays every object into a fresh state (a scheduler restart: LIST, then watch).
  void Replay(ClusterState& state) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, n] : nodes_) EXPECT_TRUE(state.OnNode(EventType::kAdded, n).ok());
    for (auto& [k, p] : pods_) EXPECT_TRUE(state.OnPod(EventType::kAdded, p).ok());
  }
  void Watch(ClusterState* state) {
    std::lock_guard<std::mutex> lock(mu_);
    watcher_ = state;
  }
  void FailBindings(bool fail) { fail_.store(fail); }

  Status Bind(const BindingRequest& b) override {
    if (fail_.load()) return Unavailable("the API server is unreachable");
    json updated;
    ClusterState* watcher;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pods_.find(b.pod.Key());
      if (it == pods_.end()) return NotFound("pods \"" + b.pod.name + "\" not found");
      json& pod = it->second;
      if (pod["spec"].contains("nodeName")) return Conflict("pod is already assigned to a node");
      pod["spec"]["nodeName"] = b.node;
      for (auto& [k, v] : b.annotations) pod["metadata"]["annotations"][k] = v;
      pod["status"]["phase"] = "Running";
      updated = pod;
      watcher = watcher_;
    }
    if (watcher) {
      EXPECT_TRUE(watcher->OnPod(EventType::kModified, updated).ok());
    }
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  std::map<std::string, json> nodes_;
  std::map<std::string, json> pods_;
  ClusterState* watcher_ = nullptr;
  std::atomic<bool> fail_{false};
};

// One scheduler process: state fed from the fake API, engine, HTTP server on a free port.
class SchedulerProcess {
 public:
  explicit SchedulerProcess(FakeApi& api, uint64_t max_body = 4 << 20,
                            std::function<std::string()> why_not_live = {})
      : api_(api),
        engine_(state_, api, {}, &metrics_),
        extender_(engine_, state_, metrics_),
        webhook_(state_, "tessera"),
        server_({.listen = "127.0.0.1:0", .max_body = max_body}, extender_, webhook_, state_,
                metrics_) {
    api.Replay(state_);
    api.Watch(&state_);
    if (why_not_live) server_.SetLiveness(std::move(why_not_live));
    Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s.message();
    server_.SetReady(true);
  }
  ~SchedulerProcess() {
    api_.Watch(nullptr);
    server_.Stop();
  }
  int port() const { return server_.port(); }
  ClusterState& state() { return state_; }
  void Drain() { server_.SetDraining(); }

 private:
  FakeApi& api_;
  ClusterState state_{DialectConfig{}};
  Metrics metrics_;
  Engine engine_;
  Extender extender_;
  Webhook webhook_;
  HttpServer server_;
};

std::vector<std::string> TenNodes(FakeApi& api) {
  for (const json& node : testing::TenMixedNodes()) api.AddNode(node);
  return testing::TenMixedNodeNames();
}

TEST(SchedulerHttp, TwoHundredMixedPodsOntoTenNodesAndRestartChangesNothing) {
  // Run A without a restart; run B restarts the scheduler after 100 pods. Same decisions.
  std::map<std::string, std::string> decisions[2];
  for (int run = 0; run < 2; ++run) {
    FakeApi api;
    std::vector<std::string> nodes = TenNodes(api);
    std::mt19937 rng(42);
    auto process = std::make_unique<SchedulerProcess>(api);
    for (int i = 0; i < 200; ++i) {
      if (run == 1 && i == 100) {
        StateSnapshot before = process->state().Snapshot();
        process.reset();
        process = std::make_unique<SchedulerProcess>(api);
        StateSnapshot after = process->state().Snapshot();
        EXPECT_EQ(after.nodes, before.nodes) << "a restart rebuilds the same usage";
      }
      json pod = testing::RandomPod(i, rng);
      api.PutPod(pod);
      (void)process->state().OnPod(EventType::kAdded, pod);
      decisions[run][pod["metadata"]["name"]] = Driver(process->port()).Schedule(pod, nodes);
    }
    testing::ExpectNoGpuOverAllocated(api.Pods());
    int bound = 0;
    for (auto& [pod, node] : decisions[run]) bound += StartsWith(node, "node-");
    EXPECT_GT(bound, 100) << "most of the pods find room";
  }
  EXPECT_EQ(decisions[0], decisions[1]);
}

TEST(SchedulerHttp, SixtyFourConcurrentBindsToOneNode) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 2, "A100", 40960));
  SchedulerProcess process(api);
  constexpr int kPods = 64;
  for (int i = 0; i < kPods; ++i) {
    json pod = MakePod("p" + std::to_string(i), {{"nvidia.com/gpumem", 2048}});
    api.PutPod(pod);
    ASSERT_TRUE(process.state().OnPod(EventType::kAdded, pod).ok());
    json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n"}}};
    json f = Driver(process.port()).Post("/filter", args.dump());
    ASSERT_EQ(f["NodeNames"], json({"n"}));
  }
  std::atomic<int> bound{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      Driver d(process.port());
      std::string name = "p" + std::to_string(i);
      json r = d.Post("/bind", json{{"PodName", name},
                                    {"PodNamespace", "default"},
                                    {"PodUID", "uid-" + name},
                                    {"Node", "n"}}
                                   .dump());
      if (r.is_object() && r["Error"] == "") bound.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bound.load(), 40);                                // 20 x 2048 MiB per 40960 MiB GPU
  const StateSnapshot snapshot = process.state().Snapshot();  // alive while iterating its GPUs
  for (const GpuSlot& g : snapshot.nodes.at("n").gpus) {
    EXPECT_EQ(g.used_mib, 40960u);
    EXPECT_EQ(g.pods, 20);
  }
}

TEST(SchedulerHttp, DeleteSucceededAndBindFailureFreeResources) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "SimGPU-3090", 24268));
  SchedulerProcess process(api);
  Driver d(process.port());
  auto used = [&] { return process.state().Snapshot().nodes.at("n").gpus[0].used_mib; };
  auto schedule = [&](const std::string& name) {
    json pod = MakePod(name, {{"tencent.com/vcuda-memory", 94}});
    api.PutPod(pod);
    (void)process.state().OnPod(EventType::kAdded, pod);
    return d.Schedule(pod, {"n"});
  };
  EXPECT_EQ(schedule("a"), "n");
  EXPECT_EQ(used(), 24064u);
  EXPECT_EQ(schedule("b"), "") << "the GPU is full";

  json a = api.Pod("a");
  api.ErasePod("a");
  ASSERT_TRUE(process.state().OnPod(EventType::kDeleted, a).ok());
  EXPECT_EQ(used(), 0u);
  EXPECT_EQ(d.Schedule(api.Pod("b"), {"n"}), "n");

  json b = api.Pod("b");
  b["status"]["phase"] = "Succeeded";
  api.PutPod(b);
  ASSERT_TRUE(process.state().OnPod(EventType::kModified, b).ok());
  EXPECT_EQ(used(), 0u);

  api.FailBindings(true);
  std::string result = schedule("c");
  EXPECT_NE(result.find("bind failed: binding pod default/c to n: the API server is unreachable"),
            std::string::npos)
      << result;
  EXPECT_EQ(used(), 0u) << "a failed Binding leaves no reservation behind";
  api.FailBindings(false);
  EXPECT_EQ(d.Schedule(api.Pod("c"), {"n"}), "n");
}

TEST(SchedulerHttp, FilterAnswersReasonsAndTheFullNodesForm) {
  FakeApi api;
  json node = MakeUniformNode("n", 1, "SimGPU-3090", 24268);
  api.AddNode(node);
  SchedulerProcess process(api);
  Driver d(process.port());
  json pod = MakePod("big", {{"tencent.com/vcuda-memory", 95}});
  json args = {{"Pod", pod},
               {"Nodes", {{"items", {node, MakeNode("cpu-only", {})}}}},
               {"NodeNames", nullptr}};
  json f = d.Post("/filter", args.dump());
  EXPECT_TRUE(f["NodeNames"].is_null());
  EXPECT_EQ(f["Nodes"]["items"].size(), 0u);
  EXPECT_EQ(f["FailedAndUnresolvableNodes"]["n"],
            "insufficient GPU memory: need 24320 MiB on 1 GPU, largest free 24268 MiB (GPU 0, "
            "SimGPU-3090)");
  EXPECT_TRUE(f["FailedAndUnresolvableNodes"].contains("cpu-only"));

  args["Pod"] = MakePod("ok", {{"tencent.com/vcuda-memory", 94}});
  f = d.Post("/filter", args.dump());
  ASSERT_EQ(f["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(f["Nodes"]["items"][0]["metadata"]["name"], "n");

  args["Pod"] = MakePod("bad", {{"tencent.com/vcuda-core", 150}});
  f = d.Post("/filter", args.dump());
  EXPECT_NE(f["FailedAndUnresolvableNodes"]["n"].get<std::string>().find("invalid GPU request"),
            std::string::npos);
}

TEST(SchedulerHttp, AnswersAreValidJsonForAnyNameAndReason) {
  // Filter and prioritize write their answers as text: names and reasons that need escaping
  // (quotes, backslashes, control characters, non-ASCII) must come back exactly.
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "T4", 15360));
  api.AddNode(MakeUniformNode("m", 2, "T4", 15360));
  SchedulerProcess process(api);
  Driver d(process.port());
  const std::vector<std::string> names = {"n", "we\"ird\\name", "tab\there",
                                          "n\xc3\xb6"
                                          "de"};
  // Two containers: the reason names the one that does not fit, in quotes.
  json pod = MakePod("p", std::vector<testing::TestContainer>{{"a", {{"nvidia.com/gpumem", 1000}}},
                                                              {"b", {{"nvidia.com/gpu", 2}}}});
  json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  json f = d.Post("/filter", args.dump());
  ASSERT_TRUE(f.is_object());
  EXPECT_TRUE(f["Nodes"].is_null());
  EXPECT_EQ(f["NodeNames"], json::array());
  const json& never = f["FailedAndUnresolvableNodes"];
  EXPECT_EQ(never["n"], "container \"b\": needs 2 distinct GPUs, node has 1 healthy of 1");
  for (size_t i = 1; i < names.size(); ++i) {
    EXPECT_EQ(never[names[i]], "node has no Tessera GPU inventory (never seen)") << names[i];
  }

  json scores = d.Post("/prioritize", args.dump());
  ASSERT_TRUE(scores.is_array());
  ASSERT_EQ(scores.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(scores[i], (json{{"Host", names[i]}, {"Score", 0}}));
  }

  // The full Nodes form, with more than one node that fits.
  args = {
      {"Pod", MakePod("small", {{"nvidia.com/gpumem", 1000}})},
      {"Nodes",
       {{"items", {MakeUniformNode("n", 1, "T4", 15360), MakeUniformNode("m", 2, "T4", 15360)}}}},
      {"NodeNames", nullptr}};
  f = d.Post("/filter", args.dump());
  ASSERT_EQ(f["Nodes"]["items"].size(), 2u);
  EXPECT_EQ(f["Nodes"]["items"][1], args["Nodes"]["items"][1]);
}

TEST(SchedulerHttp, BadRequestsGet400AndChangeNothing) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "T4", 15360));
  SchedulerProcess process(api, /*max_body=*/64 * 1024);
  Driver d(process.port());
  StateSnapshot before = process.state().Snapshot();
  const std::pair<const char*, std::string> cases[] = {
      {"/filter", "{not json"},
      {"/filter", "[]"},
      {"/filter", R"({"Pod":null,"NodeNames":["n"]})"},
      {"/filter", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":"n"})"},
      {"/filter", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":[1]})"},
      {"/prioritize", R"({"Pod":"x"})"},
      {"/bind", R"({"PodName":"p"})"},
      {"/bind", R"({"PodName":3,"Node":"n"})"},
      {"/mutate", R"({"request":{}})"},
      {"/validate", "null"},
      {"/filter",
       "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"x\":\"" + std::string(70000, 'a') + "\"}"},
  };
  for (const auto& [path, body] : cases) {
    json r = d.Post(path, body, 400);
    ASSERT_TRUE(r.is_object()) << path << " " << body.substr(0, 60);
    EXPECT_FALSE(r["error"].get<std::string>().empty());
  }
  EXPECT_EQ(process.state().Snapshot(), before);
  int status = 0;
  d.Get("/healthz", &status);
  EXPECT_EQ(status, 200) << "still serving";
}

TEST(SchedulerHttp, WebhookAllowsDeniesAndPatches) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 4, "T4", 15360));
  SchedulerProcess process(api);
  Driver d(process.port());

  json r = d.Post("/mutate", testing::MakeReview(MakePod("p", {{"aliyun.com/gpu-mem", 2}})).dump());
  EXPECT_EQ(r["response"]["uid"], "review-1");
  EXPECT_TRUE(r["response"]["allowed"].get<bool>());
  EXPECT_EQ(r["response"]["patchType"], "JSONPatch");
  EXPECT_EQ(json::parse(*Base64Decode(r["response"]["patch"].get<std::string>())),
            json::parse(R"([{"op":"add","path":"/spec/schedulerName","value":"tessera"}])"));

  struct Deny {
    Resources limits;
    const char* message;
  } denials[] = {
      {{{"tencent.com/vcuda-core", 150}}, "150 is not allowed: use a value below 100"},
      {{{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 120}}, "outside 1..100"},
      {{{"nvidia.com/gpu", "-1"}}, "negative"},
      {{{"aliyun.com/gpu-mem", "1.5"}}, "not a whole number"},
      {{{"nvidia.com/gpu", 5}}, "asks for 5 GPUs, but the largest node has 4"},
      {{{"nvidia.com/gpu", 1}, {"aliyun.com/gpu-mem", 1}}, "mixes dialects"},
  };
  for (const Deny& c : denials) {
    for (const char* path : {"/mutate", "/validate"}) {
      r = d.Post(path, testing::MakeReview(MakePod("p", c.limits)).dump());
      EXPECT_FALSE(r["response"]["allowed"].get<bool>()) << c.message;
      std::string message = r["response"]["status"]["message"];
      EXPECT_NE(message.find(c.message), std::string::npos) << message;
      EXPECT_FALSE(r["response"].contains("patch"));
    }
  }
  // vcuda-core 150 in words the user can act on.
  r = d.Post("/validate",
             testing::MakeReview(MakePod("p", {{"tencent.com/vcuda-core", 150}})).dump());
  EXPECT_NE(r["response"]["status"]["message"].get<std::string>().find(
                "use a value below 100 (that share of one GPU) or a multiple of 100"),
            std::string::npos);

  // Opt-out label, pods without GPU, pods already on tessera, DELETE: allowed, no patch.
  json opted = MakePod("p", {{"tencent.com/vcuda-core", 150}});
  opted["metadata"]["labels"]["tessera.io/webhook"] = "ignore";
  json plain = MakePod("p", {{"cpu", "1"}});
  json already = MakePod("p", {{"aliyun.com/gpu-mem", 2}});
  already["spec"]["schedulerName"] = "tessera";
  for (const json& review : {testing::MakeReview(opted), testing::MakeReview(plain),
                             testing::MakeReview(already), testing::MakeReview(opted, "DELETE")}) {
    r = d.Post("/mutate", review.dump());
    EXPECT_TRUE(r["response"]["allowed"].get<bool>());
    EXPECT_FALSE(r["response"].contains("patch"));
  }
}

TEST(SchedulerHttp, InspectMetricsHealth) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "T4", 15360));
  SchedulerProcess process(api);
  Driver d(process.port());
  json pod = MakePod("p", {{"nvidia.com/gpumem", 1000}, {"nvidia.com/gpucores", 20}});
  api.PutPod(pod);
  ASSERT_TRUE(process.state().OnPod(EventType::kAdded, pod).ok());
  ASSERT_EQ(d.Schedule(pod, {"n"}), "n");
  json waiting = MakePod("w", {{"aliyun.com/gpu-mem", 2}});
  ASSERT_TRUE(process.state().OnPod(EventType::kAdded, waiting).ok());

  json inspect = d.Get("/inspect");
  ASSERT_EQ(inspect["nodes"].size(), 1u);
  EXPECT_EQ(inspect["nodes"][0]["gpus"][0]["usedMiB"], 1000);
  EXPECT_EQ(inspect["nodes"][0]["gpus"][0]["usedCores"], 20);
  ASSERT_EQ(inspect["allocations"].size(), 1u);
  EXPECT_EQ(inspect["allocations"][0]["pod"], "default/p");
  ASSERT_EQ(inspect["pending"].size(), 1u);
  EXPECT_EQ(inspect["pending"][0]["containers"][0]["request"], "1 GPU x 2048 MiB");

  int status = 0;
  std::string metrics = d.Get("/metrics", &status).get<std::string>();
  EXPECT_EQ(status, 200);
  for (const char* line :
       {"tessera_gpu_memory_allocated_bytes{node=\"n\",Hostname=\"n\",gpu=\"0\",UUID=\"n-gpu0\","
        "modelName=\"T4\"} "
        "1048576000",
        "tessera_gpu_memory_inventory_bytes{node=\"n\",Hostname=\"n\",gpu=\"0\",UUID=\"n-gpu0\","
        "modelName=\"T4\"} "
        "16106127360",
        "tessera_gpu_cores_allocated_percent{node=\"n\",Hostname=\"n\",gpu=\"0\",UUID=\"n-gpu0\","
        "modelName=\"T4\"} 20",
        "tessera_scheduler_filter_seconds_count 1", "tessera_scheduler_bind_seconds_count 1",
        "tessera_scheduler_decisions_total{outcome=\"bound\"} 1"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
  }
  d.Get("/healthz", &status);
  EXPECT_EQ(status, 200);
  d.Get("/readyz", &status);
  EXPECT_EQ(status, 200);
}

// Issue 33: a GPU whose node scales its memory by 2: /inspect gives its physical memory, the
// scaling and the virtual memory the pods are placed against; an unscaled GPU gives the same
// number twice.
TEST(SchedulerHttp, InspectGivesPhysicalAndVirtualMemory) {
  FakeApi api;
  GpuInfo scaled = testing::Gpu("s-gpu0", 0, "SimGPU-24G", 24576);
  scaled.memory_scaling = 2;
  api.AddNode(MakeNode("s", {scaled, testing::Gpu("s-gpu1", 1, "SimGPU-24G", 24576)}));
  SchedulerProcess process(api);
  Driver d(process.port());
  json pod = MakePod("p", {{"nvidia.com/gpumem", 30000}});
  api.PutPod(pod);
  ASSERT_TRUE(process.state().OnPod(EventType::kAdded, pod).ok());
  ASSERT_EQ(d.Schedule(pod, {"s"}), "s") << "30000 MiB fit only the scaled GPU";
  json gpus = d.Get("/inspect")["nodes"][0]["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["memoryMiB"], 24576);
  EXPECT_EQ(gpus[0]["memoryScaling"], 2.0);
  EXPECT_EQ(gpus[0]["virtualMemoryMiB"], 49152);
  EXPECT_EQ(gpus[0]["usedMiB"], 30000);
  EXPECT_EQ(gpus[1]["memoryScaling"], 1.0);
  EXPECT_EQ(gpus[1]["virtualMemoryMiB"], 24576);
}

// A stopping replica (scheduler.shutdown-delay): not ready, so that its endpoint goes, but every
// request that still reaches it is answered.
TEST(SchedulerHttp, DrainingIsNotReadyAndServesOn) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "T4", 15360));
  SchedulerProcess process(api);
  Driver d(process.port());
  process.Drain();
  int status = 0;
  d.Get("/readyz", &status);
  EXPECT_EQ(status, 503);
  d.Get("/healthz", &status);
  EXPECT_EQ(status, 200) << "alive: the liveness probe must not restart it meanwhile";
  json pod = MakePod("p", {{"nvidia.com/gpumem", 1000}});
  api.PutPod(pod);
  ASSERT_TRUE(process.state().OnPod(EventType::kAdded, pod).ok());
  EXPECT_EQ(d.Schedule(pod, {"n"}), "n");
}

// Issue 32: /healthz means something. A replica whose liveness check reports a fault (a leader
// that stopped renewing its Lease, SchedulerApp) answers 503 with the reason, so kubelet restarts
// it; readiness is separate.
TEST(SchedulerHttp, HealthzFailsWithTheReasonTheLivenessCheckGives) {
  FakeApi api;
  api.AddNode(MakeUniformNode("n", 1, "T4", 15360));
  std::atomic<bool> stuck{false};
  SchedulerProcess process(api, 4 << 20, [&stuck] {
    return stuck.load() ? std::string("leading without renewing the lease") : std::string();
  });
  Driver d(process.port());
  int status = 0;
  d.Get("/healthz", &status);
  EXPECT_EQ(status, 200);
  stuck.store(true);
  json body = d.Get("/healthz", &status);
  EXPECT_EQ(status, 503);
  EXPECT_EQ(body.get<std::string>(), "leading without renewing the lease\n");
  d.Get("/readyz", &status);
  EXPECT_EQ(status, 200);
}

TEST(SchedulerHttp, ListenAddresses) {
  EXPECT_EQ(*ParseListen("0.0.0.0:8443"), std::make_pair(std::string("0.0.0.0"), 8443));
  EXPECT_EQ(*ParseListen("[::1]:0"), std::make_pair(std::string("::1"), 0));
  EXPECT_EQ(*ParseListen(":80"), std::make_pair(std::string("0.0.0.0"), 80));
  EXPECT_FALSE(ParseListen("8443").ok());
  EXPECT_FALSE(ParseListen("host:99999").ok());
  EXPECT_FALSE(ParseListen("host:http").ok());
}

}  // namespace
}  // namespace tessera::scheduler
