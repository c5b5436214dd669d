// A claim the DRA driver could not prepare was stored, allocated and then failed at
// NodePrepareResources, its pod stuck in ContainerCreating with the reason only in its events;
// /validate now refuses it when it is written, saying why.
#include "scheduler/claim_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

// A claim spec with one request `gpu` of the DeviceClass gpu.tessera.io asking for `cores`
// ("" for none) and the configuration entries `config`.
json Spec(const std::string& cores, json config = json::array()) {
  json exactly = {{"deviceClassName", "gpu.tessera.io"},
                  {"capacity", {{"requests", {{"memory", "8Gi"}}}}}};
  if (!cores.empty()) exactly["capacity"]["requests"]["cores"] = cores;
  json spec = {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", exactly}}}}}}};
  if (!config.empty()) spec["devices"]["config"] = config;
  return spec;
}

json Entry(json parameters, json requests = json::array()) {
  json entry = {{"opaque", {{"driver", "gpu.tessera.io"}, {"parameters", parameters}}}};
  if (!requests.empty()) entry["requests"] = requests;
  return entry;
}

json Elastic(int limit = 0) {
  json p = {{"apiVersion", "gpu.tessera.io/v1"}, {"kind", "GpuConfig"}, {"computeMode", "elastic"}};
  if (limit > 0) p["coresLimit"] = limit;
  return p;
}

TEST(ClaimAdmission, ClaimsTheDriverCanPrepareAreAllowed) {
  EXPECT_EQ(ClaimSpecDenial(Spec("")), "");
  EXPECT_EQ(ClaimSpecDenial(Spec("30", {Entry(Elastic(60))})), "");
  EXPECT_EQ(ClaimSpecDenial(Spec("30", {Entry(Elastic(), {"gpu"})})), "");
  json other_driver = {{"opaque", {{"driver", "other.example.com"}, {"parameters", 42}}}};
  EXPECT_EQ(ClaimSpecDenial(Spec("", {other_driver})), "") << "another driver's config";
  json other_class = Spec("");
  other_class["devices"]["requests"][0]["exactly"]["deviceClassName"] = "other";
  other_class["devices"]["config"] = {Entry(Elastic())};
  EXPECT_EQ(ClaimSpecDenial(other_class), "") << "elastic, but no request of the driver's class";
  EXPECT_EQ(ClaimSpecDenial(json::object()), "");
}

TEST(ClaimAdmission, RefusalsSayWhatIsWrongAndWhatIsAllowed) {
  EXPECT_THAT(ClaimSpecDenial(Spec("", {Entry({{"apiVersion", "gpu.tessera.io/v1"},
                                               {"kind", "GpuConfig"},
                                               {"computeMode", "burst"}})})),
              HasSubstr("spec.devices.config[0] (GpuConfig): "));
  EXPECT_THAT(ClaimSpecDenial(Spec("")), ::testing::IsEmpty());
  EXPECT_EQ(ClaimSpecDenial(Spec("", {Entry(Elastic())})),
            "request gpu: computeMode elastic needs capacity.requests.cores between 1 and 99 (the "
            "share it is held to under contention), it has none");
  EXPECT_THAT(ClaimSpecDenial(Spec("100", {Entry(Elastic())})), HasSubstr("it has \"100\""));

  json two = Spec("30", {Entry(Elastic(), {"gpu"})});
  two["devices"]["requests"].push_back(two["devices"]["requests"][0]);
  two["devices"]["requests"][1]["name"] = "more";
  EXPECT_THAT(ClaimSpecDenial(two),
              HasSubstr("config[0] applies to some of the claim's requests only"));

  json sub = Spec("");
  sub["devices"]["requests"][0] = {{"name", "gpu"},
                                   {"firstAvailable",
                                    {{{"name", "big"},
                                      {"deviceClassName", "gpu.tessera.io"},
                                      {"capacity", {{"requests", {{"cores", "50"}}}}}},
                                     {{"name", "small"}, {"deviceClassName", "gpu.tessera.io"}}}}};
  sub["devices"]["config"] = {Entry(Elastic())};
  EXPECT_THAT(ClaimSpecDenial(sub), HasSubstr("request gpu/small: computeMode elastic needs"));

  json mixed = Spec("");
  mixed["devices"]["requests"].push_back(mixed["devices"]["requests"][0]);
  mixed["devices"]["requests"][1]["name"] = "monitor";
  mixed["devices"]["requests"][1]["exactly"]["adminAccess"] = true;
  EXPECT_THAT(ClaimSpecDenial(mixed),
              HasSubstr("requests monitor (adminAccess) and gpu (without) in one claim"));
}

// Through /validate: a ResourceClaim and a ResourceClaimTemplate (its spec.spec) are denied with
// the claim's name; /mutate and DELETEs leave them alone.
TEST(ClaimAdmission, TheWebhookDeniesClaimsAndTemplates) {
  ClusterState state{DialectConfig{}};
  Webhook webhook(state, "tessera");
  auto review = [](const std::string& kind, const json& object, const std::string& op = "CREATE") {
    return json{{"apiVersion", "admission.k8s.io/v1"},
                {"kind", "AdmissionReview"},
                {"request",
                 {{"uid", "u-1"},
                  {"kind", {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", kind}}},
                  {"namespace", "team-a"},
                  {"operation", op},
                  {"object", object}}}};
  };
  json bad = Spec("", {Entry(Elastic())});
  json claim = {{"metadata", {{"name", "c"}}}, {"spec", bad}};
  Result<json> r = webhook.Validate(review("ResourceClaim", claim));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE((*r)["response"]["allowed"].get<bool>());
  EXPECT_EQ((*r)["response"]["status"]["code"], 403);
  EXPECT_THAT((*r)["response"]["status"]["message"].get<std::string>(),
              HasSubstr("Tessera: ResourceClaim team-a/c: request gpu: computeMode elastic needs"));

  json templ = {{"metadata", {{"name", "t"}}}, {"spec", {{"spec", bad}}}};
  r = webhook.Validate(review("ResourceClaimTemplate", templ));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT((*r)["response"]["status"]["message"].get<std::string>(),
              HasSubstr("Tessera: ResourceClaimTemplate team-a/t: request gpu"));

  json good = {{"metadata", {{"name", "c"}}}, {"spec", Spec("30", {Entry(Elastic())})}};
  r = webhook.Validate(review("ResourceClaim", good));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["response"]["allowed"].get<bool>());
  r = webhook.Validate(review("ResourceClaim", claim, "DELETE"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["response"]["allowed"].get<bool>());
  r = webhook.Mutate(review("ResourceClaim", claim));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["response"]["allowed"].get<bool>());
}

}  // namespace
}  // namespace tessera::scheduler
