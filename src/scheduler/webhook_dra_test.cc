// The webhook's DRA mode (scheduler.webhook.dra): each dialect's pod becomes claims of
// gpu.tessera.io from a ResourceClaimTemplate the webhook creates; re-admission and dry runs;
// the pods it refuses and the labels that choose the path.
#include <gtest/gtest.h>

#include <mutex>

#include "common/strings.h"
#include "scheduler/dra_rewrite.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeReview;
using testing::TestContainer;

// Records what the webhook creates; a name made before answers OK again, as the real one does
// for AlreadyExists. `fail` makes every call fail with it.
class FakeClaimTemplates : public ClaimTemplates {
 public:
  Status Create(const json& claim_template) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls;
    if (!fail.ok()) return fail;
    stored[claim_template["metadata"]["namespace"].get<std::string>() + "/" +
           claim_template["metadata"]["name"].get<std::string>()] = claim_template;
    return Status::Ok();
  }

  std::mutex mutex_;
  int calls = 0;
  Status fail;
  std::map<std::string, json> stored;
};

struct DraWebhook {
  explicit DraWebhook(DraMode mode = DraMode::kOn)
      : webhook(state, "tessera", DefaultTrustedUsers(), /*gpu_node_selector=*/true,
                {.mode = mode, .templates = &templates, .metrics = &metrics}) {}

  // The answer's response; `patch` gets its decoded JSONPatch (empty when none).
  json Mutate(const json& pod, json* patch = nullptr, bool dry_run = false) {
    json review = MakeReview(pod);
    review["request"]["namespace"] = "team-a";
    if (dry_run) review["request"]["dryRun"] = true;
    Result<json> r = webhook.Mutate(review);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return json();
    if (patch) {
      *patch = (*r)["response"].contains("patch")
                   ? json::parse(*Base64Decode((*r)["response"]["patch"].get<std::string>()))
                   : json::array();
    }
    return (*r)["response"];
  }

  ClusterState state{DialectConfig{}};
  FakeClaimTemplates templates;
  Metrics metrics;
  Webhook webhook;
};

json Template(const std::string& name, const json& requests, bool distinct = false) {
  json labels = {{"app.kubernetes.io/managed-by", "tessera-webhook"}};
  json devices = {{"requests", requests}};
  if (distinct) {
    devices["constraints"] = json::parse(R"([{"distinctAttribute":"gpu.tessera.io/uuid"}])");
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"labels", labels}}},
          {"spec", {{"metadata", {{"labels", labels}}}, {"spec", {{"devices", devices}}}}}};
}

// One request per GPU of exactly one gpu.tessera.io device with these capacity requests.
json Requests(int count, const json& capacity) {
  json out = json::array();
  for (int i = 0; i < count; ++i) {
    out.push_back({{"name", "gpu-" + std::to_string(i)},
                   {"exactly",
                    {{"deviceClassName", "gpu.tessera.io"},
                     {"allocationMode", "ExactCount"},
                     {"count", 1},
                     {"capacity", {{"requests", capacity}}}}}});
  }
  return out;
}

TEST(WebhookDra, VgpuPodBecomesAClaimAndSkipsTheExtender) {
  DraWebhook w;
  json pod = MakePod("p", {{"nvidia.com/gpu", 1},
                           {"nvidia.com/gpumem", 3000},
                           {"nvidia.com/gpucores", 30},
                           {"cpu", "1"}});
  pod["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpumem", 3000},
                                                           {"cpu", "1"}};
  json patch;
  json response = w.Mutate(pod, &patch);
  EXPECT_TRUE(response["allowed"]);
  // No schedulerName, no vGPU count and no GPU node selector: kube-scheduler's DRA plugin places
  // the pod. The memory is rounded up to the devices' 256 MiB step.
  EXPECT_EQ(patch, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpumem"},
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpucores"},
    {"op":"remove","path":"/spec/containers/0/resources/requests/nvidia.com~1gpumem"},
    {"op":"add","path":"/spec/containers/0/resources/claims","value":[{"name":"main-gpu"}]},
    {"op":"add","path":"/spec/resourceClaims",
     "value":[{"name":"main-gpu","resourceClaimTemplateName":"tessera-gpu-1x3072mi-30c"}]}
  ])"));
  ASSERT_EQ(w.templates.stored.size(), 1u);
  EXPECT_EQ(
      w.templates.stored["team-a/tessera-gpu-1x3072mi-30c"],
      Template("tessera-gpu-1x3072mi-30c", Requests(1, {{"memory", "3072Mi"}, {"cores", "30"}})));
  // The pod as stored: only its CPU is left in the resources.
  json rewritten = pod.patch(patch);
  EXPECT_EQ(rewritten["spec"]["containers"][0]["resources"],
            json::parse(R"({"limits":{"cpu":"1"},"requests":{"cpu":"1"},
                            "claims":[{"name":"main-gpu"}]})"));
  EXPECT_EQ(w.metrics.DraRewrites("vGPU"), 1u);
  EXPECT_NE(w.metrics.Render(StateSnapshot{})
                .find("tessera_scheduler_dra_rewrites_total{dialect=\"vgpu\"} 1\n"),
            std::string::npos);
}

TEST(WebhookDra, VcudaCoresAndMemoryUnits) {
  DraWebhook w;
  json patch;
  // vcuda-memory counts 256 MiB units; vcuda-core is a percent of one GPU.
  w.Mutate(MakePod("share", {{"tencent.com/vcuda-core", 50}, {"tencent.com/vcuda-memory", 8}}),
           &patch);
  EXPECT_EQ(patch.back()["value"][0]["resourceClaimTemplateName"], "tessera-gpu-1x2048mi-50c");
  EXPECT_EQ(
      w.templates.stored["team-a/tessera-gpu-1x2048mi-50c"],
      Template("tessera-gpu-1x2048mi-50c", Requests(1, {{"memory", "2048Mi"}, {"cores", "50"}})));
  // vcuda-core 200 is two whole GPUs: all their compute, and without memory all their memory
  // (the devices' default), on two distinct GPUs.
  w.Mutate(MakePod("whole", {{"tencent.com/vcuda-core", 200}}), &patch);
  EXPECT_EQ(patch.back()["value"][0]["resourceClaimTemplateName"], "tessera-gpu-2xallmem-100c");
  EXPECT_EQ(w.templates.stored["team-a/tessera-gpu-2xallmem-100c"],
            Template("tessera-gpu-2xallmem-100c", Requests(2, {{"cores", "100"}}), true));
  EXPECT_EQ(w.metrics.DraRewrites("vcuda"), 2u);
}

TEST(WebhookDra, GpushareGibAndNoComputeLimit) {
  DraWebhook w;
  json patch;
  w.Mutate(MakePod("p", {{"aliyun.com/gpu-mem", 3}}), &patch);
  EXPECT_EQ(patch, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/aliyun.com~1gpu-mem"},
    {"op":"add","path":"/spec/containers/0/resources/claims","value":[{"name":"main-gpu"}]},
    {"op":"add","path":"/spec/resourceClaims",
     "value":[{"name":"main-gpu","resourceClaimTemplateName":"tessera-gpu-1x3072mi-0c"}]}
  ])"));
  EXPECT_EQ(
      w.templates.stored["team-a/tessera-gpu-1x3072mi-0c"],
      Template("tessera-gpu-1x3072mi-0c", Requests(1, {{"memory", "3072Mi"}, {"cores", "0"}})));
  EXPECT_EQ(w.metrics.DraRewrites("gpushare"), 1u);
}

TEST(WebhookDra, TwoGpusAreTwoRequestsOnDistinctDevices) {
  DraWebhook w;
  json patch;
  w.Mutate(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}}), &patch);
  EXPECT_EQ(patch.back()["value"][0]["resourceClaimTemplateName"], "tessera-gpu-2x1024mi-0c");
  json expected = Template("tessera-gpu-2x1024mi-0c",
                           Requests(2, {{"memory", "1024Mi"}, {"cores", "0"}}), true);
  EXPECT_EQ(w.templates.stored["team-a/tessera-gpu-2x1024mi-0c"], expected);
  EXPECT_EQ(expected["spec"]["spec"]["devices"]["requests"][1]["name"], "gpu-1");
}

TEST(WebhookDra, ContainersOfOneShapeShareATemplateEachWithItsOwnClaim) {
  DraWebhook w;
  json pod = MakePod("p", std::vector<TestContainer>{{"warmup", {{"aliyun.com/gpu-mem", 1}}, true},
                                                     {"a", {{"nvidia.com/gpumem", 1024}}},
                                                     {"cpu-only", {{"cpu", "1"}}},
                                                     {"b", {{"nvidia.com/gpumem", 1024}}}});
  json patch;
  w.Mutate(pod, &patch);
  EXPECT_EQ(patch.back()["value"], json::parse(R"([
    {"name":"warmup-gpu","resourceClaimTemplateName":"tessera-gpu-1x1024mi-0c"},
    {"name":"a-gpu","resourceClaimTemplateName":"tessera-gpu-1x1024mi-0c"},
    {"name":"b-gpu","resourceClaimTemplateName":"tessera-gpu-1x1024mi-0c"}
  ])"));
  EXPECT_EQ(w.templates.calls, 1) << "one template for the one shape";
  json rewritten = pod.patch(patch);
  EXPECT_EQ(rewritten["spec"]["initContainers"][0]["resources"]["claims"][0]["name"], "warmup-gpu");
  EXPECT_FALSE(rewritten["spec"]["containers"][1]["resources"].contains("claims"));
  EXPECT_EQ(rewritten["spec"]["containers"][2]["resources"]["claims"][0]["name"], "b-gpu");
  // Counted once per dialect the pod used.
  EXPECT_EQ(w.metrics.DraRewrites("vGPU"), 1u);
  EXPECT_EQ(w.metrics.DraRewrites("gpushare"), 1u);
}

TEST(WebhookDra, ReadmissionIsIdempotent) {
  DraWebhook w;
  json pod = MakePod("p", {{"nvidia.com/gpumem", 2048}});
  json first, again;
  w.Mutate(pod, &first);
  // The same CREATE again (a retry): the same patch; the template exists and is kept.
  w.Mutate(pod, &again);
  EXPECT_EQ(again, first);
  EXPECT_EQ(w.templates.stored.size(), 1u);
  // The rewritten pod asks for no Tessera resource any more: nothing more to do.
  json patch;
  json response = w.Mutate(pod.patch(first), &patch);
  EXPECT_TRUE(response["allowed"]);
  EXPECT_EQ(patch, json::array());
}

TEST(WebhookDra, DryRunPatchesButCreatesNothing) {
  DraWebhook w;
  json pod = MakePod("p", {{"nvidia.com/gpumem", 2048}});
  json dry, real;
  w.Mutate(pod, &dry, /*dry_run=*/true);
  EXPECT_EQ(w.templates.calls, 0);
  EXPECT_EQ(w.metrics.DraRewrites("vGPU"), 0u);
  w.Mutate(pod, &real);
  EXPECT_EQ(dry, real);
  EXPECT_EQ(w.templates.calls, 1);
}

TEST(WebhookDra, RefusesWhatAClaimCannotSay) {
  DraWebhook w;
  auto denial = [&](const json& pod) {
    json response = w.Mutate(pod);
    EXPECT_FALSE(response["allowed"]) << pod.dump();
    return response["status"]["message"].get<std::string>();
  };
  // Both paths at once.
  json both = MakePod("both", {{"nvidia.com/gpu", 1}});
  both["spec"]["resourceClaims"] = json::parse(R"([{"name":"mine","resourceClaimName":"c"}])");
  EXPECT_NE(denial(both).find("both Tessera's resources and spec.resourceClaims"),
            std::string::npos);
  EXPECT_NE(denial(MakePod("pct", {{"nvidia.com/gpumem-percentage", 50}}))
                .find("container \"main\": memory as 50% of each GPU cannot be said in a DRA "
                      "claim"),
            std::string::npos);
  std::string percent = denial(MakePod("pct2", {{"nvidia.com/gpumem-percentage", 25}}));
  EXPECT_NE(percent.find("tessera.io/webhook=device-plugin"), std::string::npos)
      << "says how to keep the device plugin's path";
  std::string long_name(60, 'c');
  EXPECT_NE(
      denial(MakePod("long", std::vector<TestContainer>{{long_name, {{"nvidia.com/gpu", 1}}}}))
          .find("over the 63 of a DNS label"),
      std::string::npos);
  EXPECT_EQ(w.templates.calls, 0);
  // A pod with its own claims and no Tessera resource is not the webhook's business.
  json own = MakePod("own", {{"cpu", "1"}});
  own["spec"]["resourceClaims"] = both["spec"]["resourceClaims"];
  EXPECT_TRUE(w.Mutate(own)["allowed"]);
}

// HAMi's and Tessera's GPU selection annotations become CEL selectors on every request of the
// claim (the scheduler's own filters: case-insensitive model substrings, exact UUIDs); the
// template's name tells selections apart.
TEST(WebhookDra, SelectionAnnotationsBecomeCelSelectors) {
  DraWebhook w;
  json patch;
  json response = w.Mutate(MakePod("typed", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1024}},
                                   {{"nvidia.com/use-gputype", "A100,H100"},
                                    {"nvidia.com/nouse-gputype", "MIG"},
                                    {"nvidia.com/nouse-gpuuuid", "GPU-ABC"}}),
                           &patch);
  ASSERT_TRUE(response["allowed"]) << response.dump();
  ASSERT_EQ(w.templates.stored.size(), 1u);
  const auto& [key, stored] = *w.templates.stored.begin();
  std::string name = stored["metadata"]["name"];
  EXPECT_TRUE(name.starts_with("tessera-gpu-2x1024mi-0c-")) << name;
  EXPECT_EQ(name.size(), std::string("tessera-gpu-2x1024mi-0c-").size() + 8) << name;
  EXPECT_EQ(patch.back()["value"][0]["resourceClaimTemplateName"], name);
  const std::string device = R"(device.attributes["gpu.tessera.io"])";
  const json expected = {
      {{"cel",
        {{"expression",
          R"(["a100","h100"].exists(t, )" + device + ".model.lowerAscii().contains(t))"}}}},
      {{"cel",
        {{"expression", R"(!["mig"].exists(t, )" + device + ".model.lowerAscii().contains(t))"}}}},
      {{"cel", {{"expression", "!(" + device + R"(.uuid.lowerAscii() in ["gpu-abc"]))"}}}}};
  const json& requests = stored["spec"]["spec"]["devices"]["requests"];
  ASSERT_EQ(requests.size(), 2u);
  for (const json& r : requests) EXPECT_EQ(r["exactly"]["selectors"], expected) << r.dump();

  // Tessera's own model annotation and an include list of UUIDs; quotes stay inside the literal.
  EXPECT_EQ(
      SelectorsOf(Selection{.use_types = {"RTX \"4090\""}, .use_uuids = {"GPU-1", "gpu-2"}}),
      (std::vector<std::string>{
          R"(["rtx \"4090\""].exists(t, device.attributes["gpu.tessera.io"].model.lowerAscii().contains(t)))",
          R"(device.attributes["gpu.tessera.io"].uuid.lowerAscii() in ["gpu-1","gpu-2"])"}));
  // Another selection, another template; none, the plain name.
  w.Mutate(MakePod("other", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1024}},
                   {{"nvidia.com/use-gputype", "A100"}}));
  w.Mutate(MakePod("plain", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1024}}));
  EXPECT_EQ(w.templates.stored.size(), 3u);
  EXPECT_TRUE(w.templates.stored.contains("team-a/tessera-gpu-2x1024mi-0c"));
}

// vcuda's core limit (elastic compute up to a ceiling) becomes the claim's GpuConfig, which the
// node's DRA plugin reads (node/dra/claim_grant.h).
TEST(WebhookDra, ElasticVcudaBecomesAGpuConfig) {
  DraWebhook w;
  json patch;
  w.Mutate(MakePod("elastic", {{"tencent.com/vcuda-core", 20}, {"tencent.com/vcuda-memory", 4}},
                   {{"tencent.com/vcuda-core-limit", "60"}}),
           &patch);
  ASSERT_EQ(patch.back()["value"][0]["resourceClaimTemplateName"],
            "tessera-gpu-1x1024mi-20c-upto60");
  const json& stored = w.templates.stored.at("team-a/tessera-gpu-1x1024mi-20c-upto60");
  EXPECT_EQ(stored["spec"]["spec"]["devices"]["config"], json::parse(R"([{"opaque":{
      "driver":"gpu.tessera.io",
      "parameters":{"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","computeMode":"elastic",
                    "coresLimit":60}}}])"));
  // Up to the whole GPU: no coresLimit.
  w.Mutate(MakePod("burst", {{"tencent.com/vcuda-core", 20}, {"tencent.com/vcuda-memory", 4}},
                   {{"tencent.com/vcuda-core-limit", "100"}}),
           &patch);
  const json& burst = w.templates.stored.at("team-a/tessera-gpu-1x1024mi-20c-upto100");
  EXPECT_FALSE(
      burst["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"].contains("coresLimit"));
  // A hard request has no config.
  w.Mutate(MakePod("hard", {{"tencent.com/vcuda-core", 20}, {"tencent.com/vcuda-memory", 4}}));
  EXPECT_FALSE(
      w.templates.stored.at("team-a/tessera-gpu-1x1024mi-20c")["spec"]["spec"]["devices"].contains(
          "config"));
}

// Binpack/spread are preferences kube-scheduler has no counterpart for: the pod is admitted, and
// told.
TEST(WebhookDra, PolicyAnnotationsAreDroppedWithAWarning) {
  DraWebhook w;
  json response = w.Mutate(
      MakePod("packed", {{"nvidia.com/gpu", 1}}, {{"hami.io/gpu-scheduler-policy", "binpack"}}));
  ASSERT_TRUE(response["allowed"]) << response.dump();
  ASSERT_EQ(response["warnings"].size(), 1u) << response.dump();
  EXPECT_NE(response["warnings"][0].get<std::string>().find("ignored under DRA"),
            std::string::npos);
  EXPECT_FALSE(w.Mutate(MakePod("plain", {{"nvidia.com/gpu", 1}})).contains("warnings"));
}

TEST(WebhookDra, TemplateThatCannotBeCreatedRefusesThePod) {
  DraWebhook w;
  w.templates.fail = Status(StatusCode::kPermissionDenied, "resourceclaimtemplates is forbidden");
  json response = w.Mutate(MakePod("p", {{"nvidia.com/gpumem", 2048}}));
  EXPECT_FALSE(response["allowed"]);
  EXPECT_EQ(response["status"]["message"],
            "Tessera: cannot create ResourceClaimTemplate team-a/tessera-gpu-1x2048mi-0c for the "
            "pod's GPUs (DRA mode): resourceclaimtemplates is forbidden");
  EXPECT_EQ(w.metrics.DraRewrites("vGPU"), 0u);
}

TEST(WebhookDra, LabelsChooseThePath) {
  json pod = MakePod("p", {{"nvidia.com/gpumem", 2048}});
  json labelled_dra = pod, labelled_plugin = pod;
  labelled_dra["metadata"]["labels"]["tessera.io/webhook"] = "dra";
  labelled_plugin["metadata"]["labels"]["tessera.io/webhook"] = "device-plugin";
  auto path = [](DraWebhook& w, const json& p) {
    json patch;
    w.Mutate(p, &patch);
    return patch.empty() ? std::string("none") : patch[0]["path"].get<std::string>();
  };
  const std::string extender = "/spec/schedulerName";
  const std::string dra = "/spec/containers/0/resources/limits/nvidia.com~1gpumem";
  DraWebhook on(DraMode::kOn);
  EXPECT_EQ(path(on, pod), dra);
  EXPECT_EQ(path(on, labelled_dra), dra);
  EXPECT_EQ(path(on, labelled_plugin), extender);
  DraWebhook opt_in(DraMode::kOptIn);
  EXPECT_EQ(path(opt_in, pod), extender);
  EXPECT_EQ(path(opt_in, labelled_dra), dra);
  EXPECT_EQ(path(opt_in, labelled_plugin), extender);
  DraWebhook off(DraMode::kOff);
  EXPECT_EQ(path(off, labelled_dra), extender);
  EXPECT_EQ(off.templates.calls, 0);
}

TEST(WebhookDra, ModeNames) {
  EXPECT_EQ(ParseDraMode("off"), DraMode::kOff);
  EXPECT_EQ(ParseDraMode("opt-in"), DraMode::kOptIn);
  EXPECT_EQ(ParseDraMode("on"), DraMode::kOn);
  EXPECT_EQ(ParseDraMode("true"), std::nullopt);
}

}  // namespace
}  // namespace tessera::scheduler
