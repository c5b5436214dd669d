// Namespace GPU quotas at admission (docs/quotas.md): /validate refuses a pod of any dialect or a
// ResourceClaim that would take its namespace past a quota, with what is used, asked and allowed;
// /mutate refuses a pod it would rewrite to DRA. Pods without GPU asks, namespaces without a GPU
// quota and dry runs change nothing.
#include <gtest/gtest.h>

#include "scheduler/inspect.h"
#include "scheduler/metrics.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeReview;
using testing::MakeUniformNode;

json PodIn(const std::string& ns, const std::string& name, const testing::Resources& limits) {
  json pod = MakePod(name, limits);
  pod["metadata"]["namespace"] = ns;
  return pod;
}

json ReviewIn(const std::string& ns, const json& object, const std::string& kind = "Pod") {
  json review = MakeReview(object);
  review["request"]["namespace"] = ns;
  if (kind != "Pod") {
    review["request"]["kind"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", kind}};
  }
  return review;
}

// Records nothing and fails nothing: DRA mode needs somewhere to create its templates.
class NoClaimTemplates : public ClaimTemplates {
 public:
  Status Create(const json&) override { return Status::Ok(); }
};

struct QuotaWebhook {
  explicit QuotaWebhook(DraMode dra = DraMode::kOff)
      : webhook(state, "tessera", DefaultTrustedUsers(), false,
                {.mode = dra, .templates = &templates}, &ledger) {
    ledger.OnNode(EventType::kAdded, MakeUniformNode("n1", 4, "A100", 81920));
    ledger.OnQuota(EventType::kAdded,
                   {{"apiVersion", "v1"},
                    {"kind", "ResourceQuota"},
                    {"metadata", {{"name", "gpu-quota"}, {"namespace", "ml"}}},
                    {"spec", {{"hard", {{"requests.tessera.io/gpu-memory", "10Gi"}}}}}});
  }

  json Validate(const json& review) {
    Result<json> r = webhook.Validate(review);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)["response"] : json();
  }

  ClusterState state{DialectConfig{}};
  QuotaLedger ledger{DialectConfig{}};
  NoClaimTemplates templates;
  Webhook webhook;
};

std::string Message(const json& response) {
  return response.contains("status") ? response["status"].value("message", "") : "";
}

// The issue's case: with 10 GiB allowed, a vGPU pod of 6 GiB is admitted and a vcuda pod of 24
// units (6 GiB) is refused, whether or not the watch has shown the first pod yet.
TEST(WebhookQuota, TenGiBAdmitsSixGiBOfVgpuAndRefusesSixGiBOfVcuda) {
  for (bool watched : {false, true}) {
    QuotaWebhook w;
    json vgpu = PodIn("ml", "vgpu", {{"nvidia.com/gpumem", "6144"}});
    json response = w.Validate(ReviewIn("ml", vgpu));
    EXPECT_TRUE(response["allowed"]) << Message(response);
    if (watched) w.ledger.OnPod(EventType::kAdded, vgpu);

    response = w.Validate(ReviewIn("ml", PodIn("ml", "vcuda", {{"tencent.com/vcuda-memory", 24}})));
    EXPECT_FALSE(response["allowed"]);
    EXPECT_EQ(Message(response),
              "Tessera: namespace ml: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 6 GiB "
              "used, 6 GiB asked (container \"main\": vcuda tencent.com/vcuda-memory: 24 = 1 GPU "
              "x 6144 MiB), 4 GiB left");
    EXPECT_EQ(response["status"]["code"], 403);

    // What is left still fits, in any dialect.
    response = w.Validate(ReviewIn("ml", PodIn("ml", "share", {{"aliyun.com/gpu-mem", 4}})));
    EXPECT_TRUE(response["allowed"]) << Message(response);
  }
}

TEST(WebhookQuota, OtherPodsNamespacesAndDryRunsAreUntouched) {
  QuotaWebhook w;
  EXPECT_TRUE(w.Validate(ReviewIn("ml", PodIn("ml", "cpu", {{"cpu", "64"}})))["allowed"]);
  EXPECT_TRUE(w.Validate(
      ReviewIn("free", PodIn("free", "big", {{"nvidia.com/gpumem", "80000"}})))["allowed"]);
  json dry = ReviewIn("ml", PodIn("ml", "dry", {{"nvidia.com/gpumem", "8192"}}));
  dry["request"]["dryRun"] = true;
  EXPECT_TRUE(w.Validate(dry)["allowed"]);
  EXPECT_EQ(w.ledger.Used("ml").memory_bytes, 0) << "a dry run counts nothing";
  // Too much is refused; the refusal counts nothing either.
  EXPECT_FALSE(
      w.Validate(ReviewIn("ml", PodIn("ml", "big", {{"nvidia.com/gpumem", "12288"}})))["allowed"]);
  EXPECT_EQ(w.ledger.Used("ml").memory_bytes, 0);
}

TEST(WebhookQuota, ResourceClaimsCountAndAreRefused) {
  QuotaWebhook w;
  auto claim = [](const std::string& name, const std::string& memory) {
    return json{
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
        {"spec",
         {{"devices",
           {{"requests",
             {{{"name", "gpu"},
               {"exactly",
                {{"deviceClassName", "gpu.tessera.io"},
                 {"capacity", {{"requests", {{"memory", memory}, {"cores", "30"}}}}}}}}}}}}}}};
  };
  json response = w.Validate(ReviewIn("ml", claim("a", "8Gi"), "ResourceClaim"));
  EXPECT_TRUE(response["allowed"]) << Message(response);
  response = w.Validate(ReviewIn("ml", claim("b", "4Gi"), "ResourceClaim"));
  EXPECT_FALSE(response["allowed"]);
  EXPECT_EQ(Message(response),
            "Tessera: ResourceClaim ml/b: namespace ml: GPU memory quota 10 GiB (ResourceQuota "
            "gpu-quota): 8 GiB used, 4 GiB asked (ResourceClaim b: request gpu: count 1, memory "
            "4Gi, cores 30), 2 GiB left");
  // A pod counts against the same quota as the claims.
  EXPECT_FALSE(
      w.Validate(ReviewIn("ml", PodIn("ml", "p", {{"nvidia.com/gpumem", "4096"}})))["allowed"]);
  // A template uses nothing until a claim is made from it.
  json templ = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaimTemplate"},
                {"metadata", {{"name", "t"}, {"namespace", "ml"}}},
                {"spec", {{"spec", claim("t", "40Gi")["spec"]}}}};
  EXPECT_TRUE(w.Validate(ReviewIn("ml", templ, "ResourceClaimTemplate"))["allowed"]);
}

// A pod rewritten to DRA names no dialect resource when it is validated; /mutate checks its ask
// before the rewrite, and its claims count when they are made.
TEST(WebhookQuota, DraModeRefusesBeforeTheRewrite) {
  QuotaWebhook w(DraMode::kOn);
  w.ledger.OnPod(EventType::kAdded, PodIn("ml", "running", {{"nvidia.com/gpumem", "8192"}}));
  Result<json> r =
      w.webhook.Mutate(ReviewIn("ml", PodIn("ml", "p", {{"nvidia.com/gpumem", "4096"}})));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)["response"]["allowed"]);
  EXPECT_NE(Message((*r)["response"]).find("8 GiB used, 4 GiB asked"), std::string::npos)
      << Message((*r)["response"]);
  r = w.webhook.Mutate(ReviewIn("ml", PodIn("ml", "q", {{"nvidia.com/gpumem", "2048"}})));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["response"]["allowed"]);
  EXPECT_EQ(w.ledger.Used("ml").memory_bytes, int64_t{8} << 30)
      << "/mutate records nothing: the claims count when they are created";
}

// Issue 36: the quotas and usage the webhook checks against, as /metrics and /inspect show them.
TEST(WebhookQuota, UsageIsInTheMetricsAndTheInspectAnswer) {
  QuotaWebhook w;
  w.ledger.OnQuota(EventType::kAdded,
                   {{"apiVersion", "v1"},
                    {"kind", "ResourceQuota"},
                    {"metadata", {{"name", "compute"}, {"namespace", "ml"}}},
                    {"spec", {{"hard", {{"requests.tessera.io/gpu-cores", "200"}}}}}});
  w.ledger.OnPod(EventType::kAdded,
                 PodIn("ml", "a", {{"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "30"}}));
  w.ledger.OnPod(EventType::kAdded, PodIn("other", "b", {{"nvidia.com/gpumem", "4096"}}));
  const std::vector<NamespaceQuotas> quotas = w.ledger.Quotas();

  std::string text = Metrics{}.Render(StateSnapshot{}, quotas);
  for (const char* line : {
           "# TYPE tessera_namespace_gpu_memory_quota_bytes gauge\n"
           "tessera_namespace_gpu_memory_quota_bytes{namespace=\"ml\",resourcequota=\"gpu-quota\"} "
           "10737418240\n",
           "# TYPE tessera_namespace_gpu_cores_quota_percent gauge\n"
           "tessera_namespace_gpu_cores_quota_percent{namespace=\"ml\",resourcequota=\"compute\"} "
           "200\n",
           "# TYPE tessera_namespace_gpu_memory_used_bytes gauge\n"
           "tessera_namespace_gpu_memory_used_bytes{namespace=\"ml\"} 4294967296\n",
           "# TYPE tessera_namespace_gpu_cores_used_percent gauge\n"
           "tessera_namespace_gpu_cores_used_percent{namespace=\"ml\"} 30\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " is not in\n" << text;
  }
  EXPECT_EQ(text.find("namespace=\"other\""), std::string::npos)
      << "a namespace without a quota has no series";

  EXPECT_EQ(InspectJson(StateSnapshot{}, quotas)["quotas"], json::parse(R"([
      {"namespace":"ml","name":"compute","limits":{"cores":200},
       "used":{"memoryBytes":4294967296,"cores":30}},
      {"namespace":"ml","name":"gpu-quota","limits":{"memoryBytes":10737418240},
       "used":{"memoryBytes":4294967296,"cores":30}}])"));
  EXPECT_EQ(InspectJson(StateSnapshot{})["quotas"], json::array());
}

}  // namespace
}  // namespace tessera::scheduler
