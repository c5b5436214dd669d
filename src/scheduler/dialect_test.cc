#include "scheduler/dialect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::MakePod;
using testing::Resources;
using testing::TestContainer;

GpuRequest Req(int count, uint64_t mib, int percent, int cores, bool exclusive = false) {
  GpuRequest r;
  r.count = count;
  r.memory_mib = mib;
  r.memory_percent = percent;
  r.cores = cores;
  r.exclusive = exclusive;
  return r;
}

TEST(Dialect, OneContainerRequests) {
  struct Case {
    const char* name;
    Resources limits;
    GpuRequest want;
    const char* dialect;
  } cases[] = {
      {"vgpu whole gpu", {{"nvidia.com/gpu", "1"}}, Req(1, 0, 100, 0), "vGPU"},
      {"vgpu two gpus with memory and cores",
       {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "30"}},
       Req(2, 4096, 100, 30),
       "vGPU"},
      {"vgpu cores 100 is exclusive",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 100}},
       Req(1, 0, 100, 100, true),
       "vGPU"},
      {"vgpu memory percentage",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 50}},
       Req(1, 0, 50, 0),
       "vGPU"},
      {"vgpu memory without count means one gpu",
       {{"nvidia.com/gpumem", 3000}},
       Req(1, 3000, 100, 0),
       "vGPU"},
      {"vcuda 16 memory units are 4096 MiB",
       {{"tencent.com/vcuda-core", 50}, {"tencent.com/vcuda-memory", 16}},
       Req(1, 4096, 100, 50),
       "vcuda"},
      {"vcuda 94 units", {{"tencent.com/vcuda-memory", 94}}, Req(1, 24064, 100, 0), "vcuda"},
      {"vcuda 200 cores are two whole gpus",
       {{"tencent.com/vcuda-core", 200}},
       Req(2, 0, 100, 100, true),
       "vcuda"},
      {"vcuda 100 cores one whole gpu with memory split",
       {{"tencent.com/vcuda-core", 100}, {"tencent.com/vcuda-memory", 8}},
       Req(1, 2048, 100, 100, true),
       "vcuda"},
      {"gpushare GiB", {{"aliyun.com/gpu-mem", 4}}, Req(1, 4096, 100, 0), "gpushare"},
      {"quantity suffix", {{"nvidia.com/gpumem", "2Ki"}}, Req(1, 2048, 100, 0), "vGPU"},
  };
  for (const Case& c : cases) {
    Result<PodRequest> r = ParsePod(MakePod("p", c.limits), DialectConfig{});
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().message();
    ASSERT_EQ(r->containers.size(), 1u) << c.name;
    GpuRequest want = c.want;
    want.dialect = c.dialect;
    want.slot = want.dialect == "vGPU";  // only the vGPU dialect's containers take slots
    EXPECT_EQ(r->containers[0].gpu, want) << c.name << ": got " << r->containers[0].gpu.Describe();
  }
}

TEST(Dialect, InvalidRequestsSayWhatIsAllowed) {
  struct Case {
    const char* name;
    Resources limits;
    const char* message;
  } cases[] = {
      {"vcuda core 150",
       {{"tencent.com/vcuda-core", 150}},
       "150 is not allowed: use a value below 100 (that share of one GPU) or a multiple of 100"},
      {"percentage above 100",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 101}},
       "101 is outside 1..100"},
      {"cores above 100",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 101}},
       "101 is outside 0..100"},
      {"negative count", {{"nvidia.com/gpu", "-1"}}, "is negative"},
      {"fraction", {{"nvidia.com/gpumem", "0.5"}}, "not a whole number"},
      {"memory and percentage",
       {{"nvidia.com/gpumem", 10}, {"nvidia.com/gpumem-percentage", 10}},
       "not both"},
      {"zero count with memory",
       {{"nvidia.com/gpu", 0}, {"nvidia.com/gpumem", 10}},
       "is 0 but the container also asks"},
      {"mixed dialects",
       {{"nvidia.com/gpu", 1}, {"tencent.com/vcuda-core", 50}},
       "mixes dialects vGPU (nvidia.com/gpu) and vcuda (tencent.com/vcuda-core)"},
      {"too many gpus", {{"nvidia.com/gpu", 65}}, "more than the allowed 64"},
  };
  for (const Case& c : cases) {
    Result<PodRequest> r = ParsePod(MakePod("p", c.limits), DialectConfig{});
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("container \"main\""), std::string::npos) << c.name;
  }
}

// Before, 0 meant something different per dialect: gpumem 0 was denied, vcuda-memory 0 with
// cores got the whole card, vcuda-core 0 bound with no GPU. Now 0 is the same as leaving the
// resource out, everywhere.
TEST(Dialect, ZeroIsTheSameAsLeavingTheResourceOutInEveryDialect) {
  auto parse = [](const Resources& limits) {
    Result<PodRequest> r = ParsePod(MakePod("p", limits), DialectConfig{});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : PodRequest{};
  };
  struct Case {
    const char* name;
    Resources with_zero;
    Resources left_out;
  } cases[] = {
      {"vGPU memory", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 0}}, {{"nvidia.com/gpu", 1}}},
      {"vGPU percentage",
       {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 0}},
       {{"nvidia.com/gpu", 1}}},
      {"vGPU cores",
       {{"nvidia.com/gpumem", 1000}, {"nvidia.com/gpucores", 0}},
       {{"nvidia.com/gpumem", 1000}}},
      {"vGPU all zero", {{"nvidia.com/gpumem", 0}, {"nvidia.com/gpucores", 0}}, {}},
      {"vcuda memory",
       {{"tencent.com/vcuda-core", 30}, {"tencent.com/vcuda-memory", 0}},
       {{"tencent.com/vcuda-core", 30}}},
      {"vcuda core",
       {{"tencent.com/vcuda-core", 0}, {"tencent.com/vcuda-memory", 16}},
       {{"tencent.com/vcuda-memory", 16}}},
      {"vcuda all zero", {{"tencent.com/vcuda-core", 0}}, {}},
      {"gpushare", {{"aliyun.com/gpu-mem", 0}}, {}},
  };
  for (const Case& c : cases) EXPECT_EQ(parse(c.with_zero), parse(c.left_out)) << c.name;
  // What "left out" means: no memory is the whole memory of each GPU; no resource, no GPU.
  PodRequest whole = parse({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 0}});
  ASSERT_EQ(whole.containers.size(), 1u);
  EXPECT_EQ(whole.containers[0].gpu.memory_mib, 0u);
  EXPECT_EQ(whole.containers[0].gpu.memory_percent, 100);
  EXPECT_TRUE(parse({{"tencent.com/vcuda-core", 0}}).empty());
}

TEST(Dialect, LimitsAndRequests) {
  nlohmann::json pod = MakePod("p", Resources{});
  pod["spec"]["containers"][0]["resources"]["requests"] = {{"aliyun.com/gpu-mem", 2}};
  Result<PodRequest> r = ParsePod(pod, DialectConfig{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->containers.at(0).gpu.memory_mib, 2048u);

  pod["spec"]["containers"][0]["resources"]["limits"] = {{"aliyun.com/gpu-mem", 3}};
  r = ParsePod(pod, DialectConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("limit 3 and request 2 differ"), std::string::npos);
}

TEST(Dialect, VcudaCoreLimitAnnotationMakesItElastic) {
  Resources limits = {{"tencent.com/vcuda-core", 30}, {"tencent.com/vcuda-memory", 4}};
  Result<PodRequest> r =
      ParsePod(MakePod("p", limits, {{"tencent.com/vcuda-core-limit", "80"}}), DialectConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->containers[0].gpu.mode, ComputeMode::kElastic);
  EXPECT_EQ(r->containers[0].gpu.cores_limit, 80);

  r = ParsePod(MakePod("p", limits, {{"tencent.com/vcuda-core-limit", "20"}}), DialectConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("use a whole percent from 30"), std::string::npos)
      << r.status().message();
}

TEST(Dialect, SwitchedOffAndRenamed) {
  DialectConfig d;
  d.vcuda_enabled = false;
  Result<PodRequest> r = ParsePod(MakePod("p", {{"tencent.com/vcuda-core", 150}}), d);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty()) << "a disabled dialect's resources are not Tessera's";

  d.gpushare_memory = "example.com/gpu-gib";
  r = ParsePod(MakePod("p", {{"example.com/gpu-gib", 2}}), d);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].gpu.memory_mib, 2048u);
  r = ParsePod(MakePod("p", {{"aliyun.com/gpu-mem", 2}}), d);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(d.ResourceNames(),
            (std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/gpumem",
                                      "nvidia.com/gpumem-percentage", "nvidia.com/gpucores",
                                      "example.com/gpu-gib"}));
}

TEST(Dialect, InitSidecarAndAppContainers) {
  nlohmann::json pod =
      MakePod("p", std::vector<TestContainer>{{"warmup", {{"nvidia.com/gpumem", 1000}}, true},
                                              {"sidecar", {{"aliyun.com/gpu-mem", 1}}, true},
                                              {"main", {{"tencent.com/vcuda-core", 20}}},
                                              {"plain", {}}});
  pod["spec"]["initContainers"][1]["restartPolicy"] = "Always";
  Result<PodRequest> r = ParsePod(pod, DialectConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->containers.size(), 3u) << "containers without GPU are left out";
  EXPECT_EQ(r->containers[0].name, "warmup");
  EXPECT_TRUE(r->containers[0].init);
  EXPECT_EQ(r->containers[1].name, "sidecar");
  EXPECT_FALSE(r->containers[1].init) << "a restartable init container runs beside the app";
  EXPECT_FALSE(r->containers[2].init);
}

TEST(Dialect, SelectionAndPolicyAnnotations) {
  Result<PodRequest> r = ParsePod(MakePod("p", {{"nvidia.com/gpu", 1}},
                                          {{"nvidia.com/use-gputype", "A100, H100"},
                                           {"nvidia.com/nouse-gputype", "MIG"},
                                           {"nvidia.com/nouse-gpuuuid", "GPU-bad"},
                                           {"tessera.io/gpu-uuid", "GPU-1,GPU-2"},
                                           {"tessera.io/gpu-model", "H200"},
                                           {"tessera.io/policy", "Spread"}}),
                                  DialectConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->selection.use_types, (std::vector<std::string>{"A100", "H100", "H200"}));
  EXPECT_EQ(r->selection.nouse_types, (std::vector<std::string>{"MIG"}));
  EXPECT_EQ(r->selection.use_uuids, (std::vector<std::string>{"GPU-1", "GPU-2"}));
  EXPECT_EQ(r->node_policy, Policy::kSpread);
  EXPECT_EQ(r->gpu_policy, Policy::kSpread);
  EXPECT_TRUE(r->selection.Allows("NVIDIA A100-SXM4-80GB", "gpu-1"));
  EXPECT_FALSE(r->selection.Allows("NVIDIA A100 MIG 1g.10gb", "GPU-1"));
  EXPECT_FALSE(r->selection.Allows("NVIDIA A100", "GPU-3"));
  EXPECT_FALSE(r->selection.Allows("NVIDIA T4", "GPU-1"));

  r = ParsePod(MakePod("p", {{"nvidia.com/gpu", 1}}, {{"tessera.io/policy", "fast"}}),
               DialectConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("use binpack or spread"), std::string::npos);
}

// HAMi's pods name their policies per level; before, both annotations were silently ignored.
TEST(Dialect, HamiPolicyAnnotationsSetEachLevel) {
  auto parse = [](const std::map<std::string, std::string>& annotations) {
    return ParsePod(MakePod("p", {{"nvidia.com/gpu", 1}}, annotations), DialectConfig{});
  };
  Result<PodRequest> r = parse({{"hami.io/node-scheduler-policy", "spread"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->node_policy, Policy::kSpread);
  EXPECT_EQ(r->gpu_policy, std::nullopt) << "the scheduler's GPU policy stays";

  r = parse(
      {{"hami.io/gpu-scheduler-policy", "binpack"}, {"hami.io/node-scheduler-policy", "spread"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->node_policy, Policy::kSpread);
  EXPECT_EQ(r->gpu_policy, Policy::kBinpack);

  r = parse({{"hami.io/gpu-scheduler-policy", "spread"}, {"tessera.io/policy", "spread"}});
  ASSERT_TRUE(r.ok()) << "the same policy twice is no conflict";
  EXPECT_EQ(r->node_policy, Policy::kSpread);

  r = parse({{"hami.io/gpu-scheduler-policy", "binpack"}, {"tessera.io/policy", "spread"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("tessera.io/policy: spread and "
                                              "hami.io/gpu-scheduler-policy: binpack disagree"));

  r = parse({{"hami.io/gpu-scheduler-policy", "topology-aware"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("without NVLink topology; use binpack or spread"));
  r = ParsePod(MakePod("p", {{"nvidia.com/gpu", 1}, {"nvidia.com/priority", 0}}), DialectConfig{});
  ASSERT_FALSE(r.ok()) << "HAMi's task priority was silently ignored";
  EXPECT_THAT(r.status().message(),
              HasSubstr("container \"main\": nvidia.com/priority: HAMi's task "
                        "priority has no counterpart in Tessera"));
  r = parse({{"hami.io/node-scheduler-policy", "least"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("hami.io/node-scheduler-policy: \"least\" is not allowed"));
}

TEST(Dialect, PodWithoutGpuIsEmptyAndBadShapesAreErrors) {
  Result<PodRequest> r = ParsePod(MakePod("p", {{"cpu", "1"}}), DialectConfig{});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_FALSE(ParsePod(nlohmann::json::array(), DialectConfig{}).ok());
  EXPECT_FALSE(ParsePod({{"spec", {{"containers", 3}}}}, DialectConfig{}).ok());
  EXPECT_FALSE(ParsePod({{"metadata", {{"name", "x"}}}}, DialectConfig{}).ok());
}

}  // namespace
}  // namespace tessera::scheduler
