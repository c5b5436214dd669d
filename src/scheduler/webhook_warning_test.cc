// Before, a request that no GPU of the cluster could ever hold passed admission and stayed
// Pending without a word; /validate now allows it with an admission warning that says why.
#include <gtest/gtest.h>

#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

TEST(WebhookWarning, RequestNoGpuOfTheClusterCouldHoldIsWarnedAbout) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(
      state.OnNode(EventType::kAdded, testing::MakeUniformNode("small", 1, "T4", 15360)).ok());
  ASSERT_TRUE(
      state.OnNode(EventType::kAdded, testing::MakeUniformNode("big", 2, "H200", 144384)).ok());
  Webhook webhook(state, "tessera");

  Result<json> r =
      webhook.Validate(testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 500000}})));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["response"]["allowed"].get<bool>());
  ASSERT_EQ((*r)["response"]["warnings"].size(), 1u) << r->dump();
  EXPECT_EQ((*r)["response"]["warnings"][0],
            "Tessera: no GPU node of the cluster could hold this pod, it will stay Pending: on "
            "node big (the most GPU memory), even empty: insufficient GPU memory: need 500000 MiB "
            "on 1 GPU, largest free 144384 MiB (GPU 0, H200)");

  Result<json> model = webhook.Validate(testing::MakeReview(
      testing::MakePod("p", {{"nvidia.com/gpumem", 1000}}, {{"tessera.io/gpu-model", "A100"}})));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)["response"]["warnings"].size(), 1u) << model->dump();

  Result<json> fits =
      webhook.Validate(testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 20000}})));
  ASSERT_TRUE(fits.ok());
  EXPECT_FALSE((*fits)["response"].contains("warnings")) << fits->dump();

  Result<json> mutated =
      webhook.Mutate(testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 500000}})));
  ASSERT_TRUE(mutated.ok());
  EXPECT_FALSE((*mutated)["response"].contains("warnings")) << "only /validate warns";
}

TEST(WebhookWarning, NoWarningBeforeAnyGpuNodeIsKnown) {
  ClusterState state{DialectConfig{}};
  Webhook webhook(state, "tessera");
  Result<json> r =
      webhook.Validate(testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 500000}})));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)["response"].contains("warnings"));
}

}  // namespace
}  // namespace tessera::scheduler
