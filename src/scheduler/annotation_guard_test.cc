// Pod owners could bend the accounting through Tessera's annotations; each test is one such
// attack, sent to /validate as the API server sends it (operation, userInfo, oldObject).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr char kOwner[] = "alice";
constexpr char kNodeAgent[] = "system:serviceaccount:tessera-system:tessera-node";

// A running pod as the scheduler bound it.
json RunningPod() {
  json pod = testing::MakePod("p", {{"nvidia.com/gpumem", 20000}});
  pod["spec"]["nodeName"] = "n";
  pod["metadata"]["annotations"]["tessera.io/allocation"] =
      R"({"version":1,"node":"n","containers":[{"name":"main","mode":"hard","devices":[{"uuid":"GPU-a","memoryMiB":20000,"cores":0}]}]})";
  pod["status"]["phase"] = "Running";
  return pod;
}

class AnnotationGuardTest : public ::testing::Test {
 protected:
  json Validate(const json& review) {
    Result<json> r = webhook_.Validate(review);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)["response"] : json();
  }
  ClusterState state_{DialectConfig{}};
  Webhook webhook_{state_, "tessera"};
};

TEST_F(AnnotationGuardTest, OwnerCannotFreeTheirChargeWithAllocationFailed) {
  json updated = RunningPod();
  updated["metadata"]["annotations"]["tessera.io/allocation-failed"] = "x";
  json r = Validate(testing::MakeReview(updated, "UPDATE", RunningPod(), kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["message"],
            "Tessera: user \"alice\" may not set tessera.io/allocation-failed: only Tessera's "
            "service accounts (scheduler.webhook.trusted-users) write it");
}

TEST_F(AnnotationGuardTest, OwnerCannotRewriteOrRemoveTheDecision) {
  json rewritten = RunningPod();
  rewritten["metadata"]["annotations"]["tessera.io/allocation"] = R"({"version":1})";
  json r = Validate(testing::MakeReview(rewritten, "UPDATE", RunningPod(), kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_NE(r["status"]["message"].get<std::string>().find("may not change tessera.io/allocation"),
            std::string::npos);

  json removed = RunningPod();
  removed["metadata"]["annotations"].erase("tessera.io/allocation");
  r = Validate(testing::MakeReview(removed, "UPDATE", RunningPod(), kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_NE(r["status"]["message"].get<std::string>().find("may not remove"), std::string::npos);
}

TEST_F(AnnotationGuardTest, OptOutLabelOpensNoWayAround) {
  json updated = RunningPod();
  updated["metadata"]["labels"]["tessera.io/webhook"] = "ignore";
  updated["metadata"]["annotations"]["tessera.io/allocated"] = "{}";
  json old = RunningPod();
  old["metadata"]["labels"]["tessera.io/webhook"] = "ignore";
  EXPECT_FALSE(
      Validate(testing::MakeReview(updated, "UPDATE", old, kOwner))["allowed"].get<bool>());
}

TEST_F(AnnotationGuardTest, NodeAgentMaySetItsVerdictsAndOthersMayChangeTheRest) {
  json verdict = RunningPod();
  verdict["metadata"]["annotations"]["tessera.io/allocated"] = "{}";
  EXPECT_TRUE(Validate(testing::MakeReview(verdict, "UPDATE", RunningPod(), kNodeAgent))["allowed"]
                  .get<bool>());
  json labelled = RunningPod();
  labelled["metadata"]["labels"]["team"] = "a";
  EXPECT_TRUE(Validate(testing::MakeReview(labelled, "UPDATE", RunningPod(), kOwner))["allowed"]
                  .get<bool>());
}

TEST_F(AnnotationGuardTest, PodCreatedWithAHandWrittenAllocationIsDenied) {
  json r = Validate(testing::MakeReview(RunningPod(), "CREATE", nullptr, kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["message"],
            "Tessera: a new pod may not carry tessera.io/allocation: Tessera's scheduler and node "
            "agent write it once the pod is scheduled; remove it from the pod");
  // Also for a pod that asks for no GPU, whose forged decision would still be charged.
  json plain = testing::MakePod("q", testing::Resources{});
  plain["metadata"]["annotations"]["tessera.io/allocation-failed"] = "x";
  EXPECT_FALSE(
      Validate(testing::MakeReview(plain, "CREATE", nullptr, kOwner))["allowed"].get<bool>());
}

TEST_F(AnnotationGuardTest, OwnerCannotSetChangeOrRemoveSignatures) {
  json signed_pod = RunningPod();
  signed_pod["metadata"]["annotations"]["tessera.io/allocation-signature"] = "v1.630dcd29.x";
  json r = Validate(testing::MakeReview(signed_pod, "CREATE", nullptr, kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["message"],
            "Tessera: a new pod may not carry tessera.io/allocation: Tessera's scheduler and node "
            "agent write it once the pod is scheduled; remove it from the pod");
  for (const char* key : {"tessera.io/allocation-signature", "tessera.io/allocated-signature",
                          "tessera.io/allocation-failed-signature", "tessera.io/gpus-signature"}) {
    json plain = testing::MakePod("q", testing::Resources{});
    plain["metadata"]["annotations"][key] = "v1.630dcd29.x";
    r = Validate(testing::MakeReview(plain, "CREATE", nullptr, kOwner));
    EXPECT_FALSE(r["allowed"].get<bool>()) << key;
    EXPECT_EQ(r["status"]["message"], std::string("Tessera: a new pod may not carry ") + key +
                                          ": Tessera's scheduler and node agent write it once the "
                                          "pod is scheduled; remove it from the pod");

    json set = RunningPod();
    set["metadata"]["annotations"][key] = "v1.630dcd29.x";
    r = Validate(testing::MakeReview(set, "UPDATE", RunningPod(), kOwner));
    EXPECT_FALSE(r["allowed"].get<bool>()) << key;
    EXPECT_EQ(r["status"]["message"], std::string("Tessera: user \"alice\" may not set ") + key +
                                          ": only Tessera's service accounts "
                                          "(scheduler.webhook.trusted-users) write it");
    r = Validate(testing::MakeReview(RunningPod(), "UPDATE", set, kOwner));
    EXPECT_FALSE(r["allowed"].get<bool>()) << key;
    EXPECT_THAT(r["status"]["message"].get<std::string>(),
                HasSubstr("may not remove " + std::string(key)));
  }
  json verdict = RunningPod();
  verdict["metadata"]["annotations"]["tessera.io/allocated"] = "{}";
  verdict["metadata"]["annotations"]["tessera.io/allocated-signature"] = "v1.630dcd29.x";
  EXPECT_TRUE(Validate(testing::MakeReview(verdict, "UPDATE", RunningPod(), kNodeAgent))["allowed"]
                  .get<bool>());
}

TEST_F(AnnotationGuardTest, GpuPodCreatedWithSpecNodeNameIsDenied) {
  json pod = testing::MakePod("p", {{"nvidia.com/gpumem", 20000}});
  pod["spec"]["nodeName"] = "n";
  json r = Validate(testing::MakeReview(pod, "CREATE", nullptr, kOwner));
  EXPECT_FALSE(r["allowed"].get<bool>());
  EXPECT_EQ(r["status"]["message"],
            "Tessera: a pod that asks for a GPU may not set spec.nodeName (\"n\"): only the "
            "Tessera scheduler can place it on GPUs; choose nodes with a nodeSelector or node "
            "affinity instead");
  json cpu_only = testing::MakePod("c", testing::Resources{});
  cpu_only["spec"]["nodeName"] = "n";
  EXPECT_TRUE(
      Validate(testing::MakeReview(cpu_only, "CREATE", nullptr, kOwner))["allowed"].get<bool>());
}

}  // namespace
}  // namespace tessera::scheduler
