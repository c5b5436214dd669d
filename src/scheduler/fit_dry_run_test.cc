#include "scheduler/fit_dry_run.h"

#include <gtest/gtest.h>

#include "scheduler/fake_binder.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeUniformNode;

class FitDryRunTest : public ::testing::Test {
 protected:
  FitDryRunTest() {
    EXPECT_TRUE(
        state_.OnNode(EventType::kAdded, MakeUniformNode("small", 1, "SimGPU-3090", 24268)).ok());
    EXPECT_TRUE(state_.OnNode(EventType::kAdded, MakeUniformNode("big", 2, "A100", 40960)).ok());
  }
  json Answer(const std::string& body) {
    Result<json> a = fit_.Answer(json::parse(body));
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? *a : json();
  }
  std::string Refusal(const std::string& body) {
    Result<json> a = fit_.Answer(json::parse(body));
    EXPECT_FALSE(a.ok()) << body;
    return a.ok() ? std::string() : a.status().message();
  }
  // Creates `pod` (the watch shows it) and binds it where kube-scheduler would: its decision.
  Allocation Bind(json pod, const std::string& node) {
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
    PodId id{"default", pod["metadata"]["name"], pod["metadata"]["uid"]};
    EXPECT_TRUE(engine_.Bind(id, node).ok());
    return *state_.Snapshot().pods[id.Key()].allocation;
  }

  ClusterState state_{DialectConfig{}};
  testing::FakeBinder binder_;
  Metrics metrics_;
  Engine engine_{state_, binder_, {}, &metrics_};
  DraShareTable dra_;
  FitDryRun fit_{engine_, state_, &dra_};
};

// The answer is what the scheduler does when the pod is created: the same node (best score) and
// the same GPUs, and nothing is reserved by asking.
TEST_F(FitDryRunTest, AnswersTheNodeAndGpusBindWouldGiveAndReservesNothing) {
  Bind(MakePod("first", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 10000}}), "big");
  const StateSnapshot before = state_.Snapshot();
  json a = Answer(R"j({"resources": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": 5000}})j");
  EXPECT_EQ(state_.Snapshot(), before);
  EXPECT_EQ(a["fits"], true);
  EXPECT_EQ(a["kind"], "dialect");
  EXPECT_EQ(a["request"],
            json::parse(R"j([{"name":"main","init":false,"request":"1 GPU x 5000 MiB"}])j"));
  ASSERT_EQ(a["fitting"].size(), 2u);
  EXPECT_EQ(a["node"], a["fitting"][0]);
  EXPECT_EQ(a["nodes"], json::array());

  Allocation decided = Bind(MakePod("second", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 5000}}),
                            a["node"].get<std::string>());
  ASSERT_EQ(a["gpus"].size(), 1u);
  EXPECT_EQ(a["gpus"][0]["uuid"], decided.containers[0].devices[0].uuid);
  EXPECT_EQ(a["gpus"][0]["memoryMiB"], 5000);
  EXPECT_EQ(a["gpus"][0]["container"], "main");
  EXPECT_TRUE(a["gpus"][0].contains("index") && a["gpus"][0].contains("model"));
}

TEST_F(FitDryRunTest, GivesTheFiltersReasonForEveryNodeWhereItDoesNotFit) {
  json a = Answer(
      R"j({"resources": {"tencent.com/vcuda-core": "30", "tencent.com/vcuda-memory": "120"}})j");
  EXPECT_EQ(a["fits"], true);
  EXPECT_EQ(a["node"], "big");
  EXPECT_EQ(a["request"][0]["request"], "1 GPU x 30720 MiB, 30% cores");
  EXPECT_EQ(a["nodes"], json::parse(R"j([{"node":"small","unresolvable":true,"reason":
    "insufficient GPU memory: need 30720 MiB on 1 GPU, largest free 24268 MiB (GPU 0, SimGPU-3090)"}])j"));

  // Both A100s taken: big refuses for now, resolvably.
  Bind(MakePod("a", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 20000}}), "big");
  a = Answer(R"j({"containers": [{"name": "train", "resources": {"aliyun.com/gpu-mem": 30}}]})j");
  EXPECT_EQ(a["fits"], false);
  EXPECT_FALSE(a.contains("node"));
  EXPECT_EQ(a["gpus"], json::array());
  EXPECT_EQ(a["fitting"], json::array());
  ASSERT_EQ(a["nodes"].size(), 2u);
  EXPECT_EQ(a["nodes"][0]["node"], "big");
  EXPECT_EQ(a["nodes"][0]["unresolvable"], false);
  EXPECT_EQ(
      a["nodes"][0]["reason"],
      "insufficient GPU memory: need 30720 MiB on 1 GPU, largest free 20960 MiB (GPU 0, A100)");
  EXPECT_EQ(a["request"][0]["name"], "train");
}

TEST_F(FitDryRunTest, TakesSeveralContainersInitContainersAndThePodsAnnotations) {
  json a = Answer(R"j({"containers": [
      {"name": "setup", "init": true, "resources": {"nvidia.com/gpu": 1}},
      {"name": "app", "resources": {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 40}}],
    "annotations": {"nvidia.com/use-gputype": "3090"}})j");
  EXPECT_EQ(a["fits"], true);
  EXPECT_EQ(a["node"], "small");
  ASSERT_EQ(a["request"].size(), 2u);
  EXPECT_EQ(a["nodes"][0]["node"], "big");
  EXPECT_NE(a["nodes"][0]["reason"].get<std::string>().find("use-gputype=3090"), std::string::npos)
      << a["nodes"][0]["reason"];
}

TEST_F(FitDryRunTest, BadInputSaysWhatWasWrongAndWhatIsAllowed) {
  struct Case {
    const char* body;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"j([])j",
            "must be a JSON object with one of \"containers\", \"resources\" or \"claim\""},
           {R"j({})j", "exactly one of \"containers\""},
           {R"j({"resources": {"nvidia.com/gpu": 1}, "claim": {}})j", "it has 2"},
           {R"j({"resources": {"nvidia.com/gpu": 1}, "priority": 3})j",
            "unknown field \"priority\" (allowed: containers, resources, claim, annotations)"},
           {R"j({"containers": []})j", "\"containers\" must be a non-empty list"},
           {R"j({"containers": [{"resources": {"nvidia.com/gpu": 1}, "image": "x"}]})j",
            "containers[0]: unknown field \"image\" (allowed: name, init, resources)"},
           {R"j({"containers": [{"name": "a", "resources": {"nvidia.com/gpu": 1}},
                               {"name": "a", "resources": {"nvidia.com/gpu": 1}}]})j",
            "containers[1]: the container name \"a\" is used twice"},
           {R"j({"resources": {}})j", "the enabled dialects' resources are nvidia.com/gpu"},
           {R"j({"resources": {"nvidia.com/gpus": 1}})j",
            "\"nvidia.com/gpus\" is not a resource of an enabled dialect; those are "
            "nvidia.com/gpu"},
           {R"j({"resources": {"nvidia.com/gpu": 1.5}})j", "must be a quantity string such as"},
           {R"j({"resources": {"tencent.com/vcuda-core": "150"}})j", "tencent.com/vcuda-core: 150"},
           {R"j({"resources": {"nvidia.com/gpumem": "0"}})j", "asks for no GPU"},
           {R"j({"resources": {"nvidia.com/gpu": 1}, "annotations": {"a": 1}})j",
            "annotations[\"a\"] must be a string"},
           {R"j({"claim": {"count": 0}})j", "claim.count must be a whole number from 1 to 64"},
           {R"j({"claim": {"gpus": 1}})j",
            "claim: unknown field \"gpus\" (allowed: count, memory, cores)"},
           {R"j({"claim": {"memory": "8 GB"}})j", "claim.memory: "},
           {R"j({"claim": {"memory": "0"}})j", "claim.memory must be more than 0"},
           {R"j({"claim": {"cores": 101}})j", "claim.cores must be a whole percent from 0 to 100"},
           {R"j({"claim": {}, "annotations": {}})j", "\"annotations\" go with"},
       }) {
    std::string why = Refusal(c.body);
    EXPECT_NE(why.find(c.says), std::string::npos) << c.body << "\n -> " << why;
  }
}

// A claim counts every share on a GPU, device-plugin and DRA alike, with its memory rounded up to
// the devices' 256 MiB step.
TEST_F(FitDryRunTest, AClaimIsFittedAgainstDevicePluginAndDraShares) {
  json a = Answer(R"j({"claim": {"memory": "30000Mi", "cores": 20}})j");
  EXPECT_EQ(a["kind"], "claim");
  EXPECT_EQ(a["fits"], true);
  EXPECT_EQ(a["request"][0]["request"], "1 GPU x 30208 MiB, 20% cores");
  EXPECT_EQ(a["node"], "big");
  EXPECT_EQ(a["gpus"].size(), 1u);
  EXPECT_TRUE(a.contains("note"));
  EXPECT_EQ(a["nodes"][0]["node"], "small");

  // gpu-0 holds a claim of 20 GiB, gpu-1 one of its whole memory.
  dra_.OnClaim(EventType::kAdded, json::parse(R"j({"metadata": {"name": "c", "namespace": "ml"},
                 "status": {"allocation": {"devices": {"results": [
                   {"driver": "gpu.tessera.io", "pool": "big", "device": "gpu-0",
                    "consumedCapacity": {"memory": "20Gi"}},
                   {"driver": "gpu.tessera.io", "pool": "big", "device": "gpu-1"}]}}}})j"));
  a = Answer(R"j({"claim": {"memory": "30000Mi"}})j");
  EXPECT_EQ(a["fits"], false);
  ASSERT_EQ(a["nodes"].size(), 2u);
  EXPECT_EQ(a["nodes"][0]["node"], "big");
  EXPECT_EQ(a["nodes"][0]["unresolvable"], false);
  EXPECT_NE(a["nodes"][0]["reason"].get<std::string>().find("largest free 20480 MiB"),
            std::string::npos)
      << a["nodes"][0]["reason"];
  // A device-plugin share counts too.
  Bind(MakePod("dp", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 20000}}), "big");
  a = Answer(R"j({"claim": {"memory": "1Gi"}})j");
  EXPECT_EQ(a["fits"], true);
  EXPECT_EQ(a["node"], "small");
}

}  // namespace
}  // namespace tessera::scheduler
