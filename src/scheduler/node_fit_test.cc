#include "scheduler/node_fit.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "scheduler/dialect.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using testing::Gpu;
using testing::MakePod;
using testing::Resources;
using testing::TestContainer;

std::vector<GpuSlot> Slots(const std::vector<GpuInfo>& gpus) {
  std::vector<GpuSlot> out;
  for (const GpuInfo& g : gpus) out.push_back({g});
  return out;
}

std::vector<GpuSlot> Uniform(int n, const std::string& model, uint64_t mib) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(Gpu("GPU-" + std::to_string(i), i, model, mib, i % 2));
  return Slots(gpus);
}

PodRequest Parse(const nlohmann::json& pod) {
  Result<PodRequest> r = ParsePod(pod, DialectConfig{});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : PodRequest{};
}

struct FitCase {
  bool fits;
  FitOutput out;
};

FitCase FitPod(const PodRequest& req, const std::vector<GpuSlot>& gpus,
               Policy policy = Policy::kBinpack, bool ignore_usage = false) {
  FitScratch scratch;
  FitCase o;
  o.fits = Fit(req, gpus,
               {.gpu_policy = policy,
                .want_allocation = true,
                .want_reason = true,
                .ignore_usage = ignore_usage},
               scratch, &o.out);
  return o;
}

std::vector<std::string> Uuids(const Allocation& a, size_t container = 0) {
  std::vector<std::string> out;
  for (const DeviceAllocation& d : a.containers.at(container).devices) out.push_back(d.uuid);
  return out;
}

TEST(NodeFit, SeedObservationsAndReasons) {
  const std::vector<GpuSlot> rtx3090 = Slots({Gpu("GPU-3090", 0, "SimGPU-3090", 24268)});
  struct Case {
    const char* name;
    Resources limits;
    std::vector<GpuSlot> gpus;
    bool fits;
    const char* reason;  // substring, for the cases that do not fit
  } cases[] = {
      {"94 vcuda units fit a 3090", {{"tencent.com/vcuda-memory", 94}}, rtx3090, true, ""},
      {"95 vcuda units do not",
       {{"tencent.com/vcuda-memory", 95}},
       rtx3090,
       false,
       "insufficient GPU memory: need 24320 MiB on 1 GPU, largest free 24268 MiB (GPU 0, "
       "SimGPU-3090)"},
      {"200 vcuda cores on two GPUs",
       {{"tencent.com/vcuda-core", 200}},
       Uniform(2, "SimGPU-3090", 24268),
       true,
       ""},
      {"200 vcuda cores on one GPU",
       {{"tencent.com/vcuda-core", 200}},
       rtx3090,
       false,
       "needs 2 distinct GPUs, node has 1 healthy of 1"},
      {"more vGPUs than cards",
       {{"nvidia.com/gpu", 3}},
       Uniform(2, "T4", 15360),
       false,
       "needs 3 distinct GPUs, node has 2 healthy of 2"},
      {"type selection",
       {{"nvidia.com/gpu", 1}},
       rtx3090,
       false,
       "needs 1 GPU matching use-gputype=A100, node has 0 (its GPUs: SimGPU-3090)"},
  };
  for (Case& c : cases) {
    nlohmann::json pod = MakePod("p", c.limits);
    if (std::string(c.name) == "type selection") {
      pod["metadata"]["annotations"]["nvidia.com/use-gputype"] = "A100";
    }
    FitCase o = FitPod(Parse(pod), c.gpus);
    EXPECT_EQ(o.fits, c.fits) << c.name << ": " << o.out.reason;
    if (!c.fits) {
      EXPECT_NE(o.out.reason.find(c.reason), std::string::npos) << c.name << ": " << o.out.reason;
    }
  }
}

// Before, a pod that used tessera.io/gpu-model was told about use-gputype, an annotation it
// never set.
TEST(NodeFit, SelectionReasonNamesTheAnnotationThePodUsed) {
  const std::vector<GpuSlot> rtx3090 = Uniform(1, "SimGPU-3090", 24268);
  struct Case {
    std::map<std::string, std::string> annotations;
    const char* reason;
  } cases[] = {
      {{{"tessera.io/gpu-model", "A100"}}, "needs 1 GPU matching tessera.io/gpu-model=A100,"},
      {{{"nvidia.com/use-gputype", "A100"}}, "needs 1 GPU matching use-gputype=A100,"},
      {{{"nvidia.com/use-gputype", "A100"}, {"tessera.io/gpu-model", "H200"}},
       "needs 1 GPU matching use-gputype+tessera.io/gpu-model=A100,H200,"},
      {{{"tessera.io/gpu-uuid", "GPU-x"}}, "needs 1 GPU matching tessera.io/gpu-uuid=GPU-x,"},
  };
  for (const Case& c : cases) {
    FitCase o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 1}}, c.annotations)), rtx3090);
    ASSERT_FALSE(o.fits);
    EXPECT_NE(o.out.reason.find(c.reason), std::string::npos) << o.out.reason;
  }
}

TEST(NodeFit, TwoHundredCoresAreTwoWholeDistinctGpus) {
  FitCase o = FitPod(Parse(MakePod("p", {{"tencent.com/vcuda-core", 200}})),
                     Uniform(4, "SimGPU-3090", 24268));
  ASSERT_TRUE(o.fits);
  const auto& devices = o.out.allocation.containers[0].devices;
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_NE(devices[0].uuid, devices[1].uuid);
  for (const DeviceAllocation& d : devices) {
    EXPECT_TRUE(d.exclusive);
    EXPECT_EQ(d.memory_mib, 24268u);
    EXPECT_EQ(d.cores, 100);
  }
  // The seed's 16 units = 4096 MiB.
  o = FitPod(
      Parse(MakePod("p", {{"tencent.com/vcuda-core", 50}, {"tencent.com/vcuda-memory", 16}})),
      Uniform(1, "SimGPU-3090", 24268));
  ASSERT_TRUE(o.fits);
  EXPECT_EQ(o.out.allocation.containers[0].devices[0].memory_mib, 4096u);
}

TEST(NodeFit, PoliciesPickGpus) {
  std::vector<GpuSlot> gpus = Uniform(3, "T4", 16000);
  gpus[0].used_mib = 4000;
  gpus[0].pods = 1;
  gpus[1].used_mib = 12000;
  gpus[1].pods = 1;
  PodRequest req = Parse(MakePod("p", {{"nvidia.com/gpumem", 3000}}));
  struct Case {
    Policy policy;
    const char* want;
  } cases[] = {{Policy::kBinpack, "GPU-1"}, {Policy::kSpread, "GPU-2"}};
  for (const Case& c : cases) {
    FitCase o = FitPod(req, gpus, c.policy);
    ASSERT_TRUE(o.fits);
    EXPECT_EQ(Uuids(o.out.allocation), std::vector<std::string>{c.want}) << PolicyName(c.policy);
  }
  // The pod's own tessera.io/policy wins over the configured one.
  req.gpu_policy = Policy::kSpread;
  EXPECT_EQ(Uuids(FitPod(req, gpus, Policy::kBinpack).out.allocation),
            std::vector<std::string>{"GPU-2"});
}

TEST(NodeFit, TypeAndUuidSelection) {
  std::vector<GpuSlot> gpus =
      Slots({Gpu("GPU-0", 0, "NVIDIA A100-SXM4-80GB", 81920),
             Gpu("GPU-1", 1, "NVIDIA A100-SXM4-80GB", 81920), Gpu("GPU-2", 2, "Tesla T4", 15360)});
  gpus[0].used_mib = 40000;  // binpack's first choice when allowed
  gpus[0].pods = 1;
  struct Case {
    std::map<std::string, std::string> annotations;
    std::vector<std::string> want;  // empty: does not fit
  } cases[] = {
      {{}, {"GPU-2"}},
      {{{"nvidia.com/use-gputype", "a100"}}, {"GPU-0"}},
      {{{"tessera.io/gpu-model", "A100"}, {"nvidia.com/nouse-gpuuuid", "GPU-0"}}, {"GPU-1"}},
      {{{"nvidia.com/use-gpuuuid", "GPU-1"}}, {"GPU-1"}},
      {{{"tessera.io/gpu-uuid", "gpu-2"}}, {"GPU-2"}},
      {{{"nvidia.com/nouse-gputype", "T4,A100"}}, {}},
  };
  for (const Case& c : cases) {
    FitCase o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem", 8000}}, c.annotations)), gpus);
    EXPECT_EQ(o.fits, !c.want.empty()) << o.out.reason;
    if (o.fits) {
      EXPECT_EQ(Uuids(o.out.allocation), c.want);
    } else {
      EXPECT_NE(o.out.reason.find("matching nouse-gputype=T4,A100"), std::string::npos)
          << o.out.reason;
    }
  }
}

TEST(NodeFit, Exclusivity) {
  std::vector<GpuSlot> gpus = Uniform(2, "A100", 40000);
  gpus[0].used_mib = 1000;
  gpus[0].pods = 1;
  // Exclusive: only the idle GPU.
  FitCase o =
      FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 100}})), gpus);
  ASSERT_TRUE(o.fits);
  EXPECT_EQ(Uuids(o.out.allocation), std::vector<std::string>{"GPU-1"});
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpucores", 100}})), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("needs 2 GPUs to itself (exclusive), only 1 of 2 are free"),
            std::string::npos)
      << o.out.reason;
  // A shared request avoids a GPU someone holds exclusively.
  gpus[1].pods = 1;
  gpus[1].exclusive_pods = 1;
  gpus[1].used_cores = 100;
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem", 100}})), gpus, Policy::kSpread);
  ASSERT_TRUE(o.fits);
  EXPECT_EQ(Uuids(o.out.allocation), std::vector<std::string>{"GPU-0"});
  gpus[0].exclusive_pods = 1;
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem", 100}})), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("not held exclusively by another pod"), std::string::npos);
}

TEST(NodeFit, MultiGpuStaysOnOneNumaNode) {
  // Indexes 0..3 on NUMA 0,1,0,1; GPU-0 is the fullest, so binpack starts on NUMA 0.
  std::vector<GpuSlot> gpus = Uniform(4, "H100", 80000);
  gpus[0].used_mib = 10000;
  gpus[0].pods = 1;
  gpus[1].used_mib = 5000;
  gpus[1].pods = 1;
  FitCase o =
      FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}})), gpus);
  ASSERT_TRUE(o.fits);
  std::vector<std::string> got = Uuids(o.out.allocation);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()),
            (std::set<std::string>{"GPU-0", "GPU-2"}));
}

TEST(NodeFit, ContainersOfOnePodAndInitPeak) {
  std::vector<GpuSlot> gpus = Uniform(2, "L4", 10000);
  // Two app containers of 6000 MiB cannot share one 10000 MiB GPU: they land on both.
  nlohmann::json pod =
      MakePod("p", std::vector<TestContainer>{{"a", {{"nvidia.com/gpumem", 6000}}},
                                              {"b", {{"nvidia.com/gpumem", 6000}}},
                                              {"init", {{"nvidia.com/gpumem", 9000}}, true}});
  FitCase o = FitPod(Parse(pod), gpus);
  ASSERT_TRUE(o.fits) << o.out.reason;
  // Containers are listed init first, as the pod spec is read: init, a, b.
  EXPECT_NE(Uuids(o.out.allocation, 1), Uuids(o.out.allocation, 2));
  // The init container reuses a GPU of the pod: it adds 3000 MiB above the 6000 held there.
  EXPECT_EQ(o.out.charged_mib, 6000u + 6000u + 3000u);
  std::vector<GpuCharge> charges = ChargesOf(o.out.allocation);
  uint64_t total = 0;
  for (const GpuCharge& c : charges) total += c.memory_mib;
  EXPECT_EQ(total, o.out.charged_mib) << "the allocation charges exactly what Fit checked";
  // A third app container of 6000 no longer fits; the reason names the container.
  pod["spec"]["containers"].push_back(pod["spec"]["containers"][0]);
  pod["spec"]["containers"][2]["name"] = "c";
  o = FitPod(Parse(pod), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("container \"c\": insufficient GPU memory: need 6000 MiB"),
            std::string::npos)
      << o.out.reason;
}

// A GPU in MIG mode is no CUDA device itself: no share is placed on it, whatever its free
// memory, and the reason says why the node has too few GPUs.
TEST(NodeFit, NoShareOnAGpuInMigMode) {
  std::vector<GpuSlot> gpus = Uniform(2, "H100", 81559);
  gpus[0].info.mig = annotations::InventoryMig{.mode = "fixed", .enabled = true};
  FitCase o =
      FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1000}})), gpus);
  ASSERT_TRUE(o.fits) << o.out.reason;
  EXPECT_EQ(Uuids(o.out.allocation), std::vector<std::string>{"GPU-1"});
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}})), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("needs 2 distinct GPUs, node has 1 healthy of 2 not in MIG mode"),
            std::string::npos)
      << o.out.reason;
  // MIG mode pending (after a reset) leaves the GPU a CUDA device until then.
  gpus[0].info.mig->enabled = false;
  gpus[0].info.mig->pending = true;
  EXPECT_TRUE(
      FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}})), gpus).fits);
}

TEST(NodeFit, ComputeAndPercentAndHealth) {
  std::vector<GpuSlot> gpus = Uniform(2, "A10", 24000);
  gpus[0].used_cores = 90;
  gpus[0].pods = 1;
  gpus[1].info.healthy = false;
  FitCase o = FitPod(
      Parse(MakePod(
          "p", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 10}, {"nvidia.com/gpucores", 30}})),
      gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("insufficient GPU compute: need 30% cores on 1 GPU, most free 10% "
                              "(GPU 0, A10)"),
            std::string::npos)
      << o.out.reason;
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem-percentage", 50}})), gpus);
  ASSERT_TRUE(o.fits);
  EXPECT_EQ(o.out.allocation.containers[0].devices[0].memory_mib, 12000u);
  gpus[0].used_mib = 20000;
  o = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem-percentage", 50}})), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("need 12000 MiB (50% of the GPU) on 1 GPU, largest free 4000 MiB"),
            std::string::npos)
      << o.out.reason;
  EXPECT_TRUE(FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem-percentage", 50}})), gpus,
                     Policy::kBinpack, /*ignore_usage=*/true)
                  .fits);
}

TEST(NodeFit, VgpuSlotsAreCountedPerGpu) {
  // Two GPUs of 4 slots; GPU 0 has all 4 taken, GPU 1 three: a vGPU container fits on GPU 1
  // only, although GPU 0 has far more memory free (binpack would pick it).
  std::vector<GpuSlot> gpus = Uniform(2, "A10", 24000);
  for (GpuSlot& g : gpus) g.info.slots = 4;
  gpus[0].used_slots = 4;
  gpus[0].used_mib = 1000;
  gpus[0].pods = 4;
  gpus[1].used_slots = 3;
  gpus[1].used_mib = 20000;
  gpus[1].pods = 3;
  nlohmann::json vgpu = MakePod("p", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1000}});
  FitCase o = FitPod(Parse(vgpu), gpus);
  ASSERT_TRUE(o.fits) << o.out.reason;
  EXPECT_EQ(Uuids(o.out.allocation), std::vector<std::string>{"GPU-1"});
  EXPECT_TRUE(o.out.allocation.containers[0].slot);
  ASSERT_EQ(ChargesOf(o.out.allocation).size(), 1u);
  EXPECT_EQ(ChargesOf(o.out.allocation)[0].slots, 1);
  // With both full, the reason names the GPU, its slot count and where it comes from.
  gpus[1].used_slots = 4;
  o = FitPod(Parse(vgpu), gpus);
  EXPECT_FALSE(o.fits);
  EXPECT_NE(o.out.reason.find("no free vGPU slot: GPU 0, A10 has all its 4 slots taken "
                              "(the node's device-split-count)"),
            std::string::npos)
      << o.out.reason;
  // Other dialects take no slot: a vcuda and a gpushare container still fit.
  EXPECT_TRUE(
      FitPod(Parse(MakePod("p", {{"tencent.com/vcuda-core", 10}, {"tencent.com/vcuda-memory", 4}})),
             gpus)
          .fits);
  EXPECT_TRUE(FitPod(Parse(MakePod("p", {{"aliyun.com/gpu-mem", 1}})), gpus).fits);
  // Against the empty node (could it ever fit here?) the slots are free again.
  EXPECT_TRUE(FitPod(Parse(vgpu), gpus, Policy::kBinpack, /*ignore_usage=*/true).fits);
  // An inventory without slots (an older agent) does not limit them.
  for (GpuSlot& g : gpus) g.info.slots = 0;
  EXPECT_TRUE(FitPod(Parse(vgpu), gpus).fits);
}

TEST(NodeFit, AnInitContainerTakesNoSecondSlotWhereThePodHoldsOne) {
  // One slot left on each of two GPUs: the app container takes one, the init container reuses
  // the pod's GPU (the peak of init against the sum of app, as kubelet hands devices on).
  std::vector<GpuSlot> gpus = Uniform(2, "A10", 24000);
  for (GpuSlot& g : gpus) {
    g.info.slots = 2;
    g.used_slots = 1;
    g.pods = 1;
  }
  nlohmann::json pod =
      MakePod("p", std::vector<TestContainer>{
                       {"main", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 100}}},
                       {"init", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 100}}, true}});
  FitCase o = FitPod(Parse(pod), gpus);
  ASSERT_TRUE(o.fits) << o.out.reason;
  std::vector<GpuCharge> charges = ChargesOf(o.out.allocation);
  ASSERT_EQ(charges.size(), 1u);
  EXPECT_EQ(charges[0].slots, 1);
  // Two app containers need a slot each: on two GPUs of one free slot each, they split.
  pod["spec"]["initContainers"][0]["restartPolicy"] = "Always";
  o = FitPod(Parse(pod), gpus);
  ASSERT_TRUE(o.fits) << o.out.reason;
  EXPECT_NE(Uuids(o.out.allocation, 0), Uuids(o.out.allocation, 1));
}

// A random one-GPU-kind request for the agreement tests below.
GpuRequest RandomRequest(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GpuRequest r;
  r.count = pick(1, 3);
  r.memory_mib = pick(0, 1) ? pick(1, 16) * 1000 : 0;
  r.memory_percent = pick(1, 100);
  r.cores = pick(0, 10) * 10;
  r.exclusive = pick(0, 4) == 0;
  r.slot = pick(0, 1) == 0;
  return r;
}

TEST(NodeFit, QuickCheckAgreesWithTheFullFit) {
  // Filter's quick check of one-container pods must answer exactly as the placing fit does.
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  FitScratch scratch;
  int fits = 0, misses = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<GpuSlot> gpus = Uniform(pick(1, 4), pick(0, 1) ? "A100" : "T4", 16000);
    for (GpuSlot& g : gpus) {
      g.pods = pick(0, 2);
      g.used_mib = g.pods * pick(0, 8000);
      g.used_cores = g.pods * pick(0, 50);
      g.exclusive_pods = g.pods > 0 && pick(0, 5) == 0;
      g.info.healthy = pick(0, 9) > 0;
      g.info.slots = pick(0, 3);
      g.used_slots = std::min(g.pods, g.info.slots);
    }
    GpuRequest r = RandomRequest(rng);
    PodRequest req{{{"main", false, r}}, {}, std::nullopt};
    if (pick(0, 3) == 0) req.selection.use_types = {"A100"};
    for (bool ignore : {false, true}) {
      FitOptions options{.want_allocation = true, .ignore_usage = ignore};
      FitOutput out;
      bool full = Fit(req, gpus, options, scratch, &out);
      bool quick = Fit(req, gpus, options, scratch, nullptr);
      ASSERT_EQ(quick, full) << "round " << round << " " << r.Describe();
      (full ? fits : misses)++;
    }
  }
  EXPECT_GT(fits, 500);
  EXPECT_GT(misses, 500);
}

TEST(NodeFit, ChargedMibAgreesWithTheFullFit) {
  // Prioritize's charge must be the placing fit's, also where it takes the quick check: nodes of
  // one GPU size and of mixed sizes, requests in MiB and in percent, one and two containers.
  std::mt19937 rng(12);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  FitScratch scratch;
  int fits = 0, misses = 0, quick = 0;
  for (int round = 0; round < 3000; ++round) {
    const bool mixed = pick(0, 1);
    std::vector<GpuSlot> gpus = Uniform(pick(1, 4), "A100", 16000);
    for (GpuSlot& g : gpus) {
      if (mixed) g.info.memory_mib = 8000 * pick(1, 3);
      g.pods = pick(0, 2);
      g.used_mib = g.pods * pick(0, 6000);
      g.used_cores = g.pods * pick(0, 50);
      g.exclusive_pods = g.pods > 0 && pick(0, 5) == 0;
      g.info.healthy = pick(0, 9) > 0;
      g.info.slots = pick(0, 3);
      g.used_slots = std::min(g.pods, g.info.slots);
    }
    PodRequest req{{{"main", pick(0, 3) == 0, RandomRequest(rng)}}, {}, std::nullopt};
    if (pick(0, 2) == 0) req.containers.push_back({"side", pick(0, 1) == 1, RandomRequest(rng)});
    const Policy policy = pick(0, 1) ? Policy::kBinpack : Policy::kSpread;
    FitOutput out;
    bool full = Fit(req, gpus, {.gpu_policy = policy}, scratch, &out);
    std::optional<uint64_t> charged = ChargedMib(req, gpus, policy, scratch);
    ASSERT_EQ(charged.has_value(), full) << "round " << round;
    if (full) {
      ASSERT_EQ(*charged, out.charged_mib) << "round " << round;
    }
    (full ? fits : misses)++;
    quick += !mixed && req.containers.size() == 1;
  }
  EXPECT_GT(fits, 500);
  EXPECT_GT(misses, 500);
  EXPECT_GT(quick, 500);
}

// Issue 33: on a node with device-memory-scaling 2 a 24 GiB GPU offers 48 GiB of virtual memory:
// two 20 GiB containers share it, a third does not fit, and the reason names the virtual memory
// and the physical it comes from. The quick check and the quick charge agree.
TEST(NodeFit, ScaledMemoryIsPlacedAgainstVirtualMemory) {
  std::vector<GpuSlot> gpus = Uniform(1, "SimGPU-24G", 24576);
  gpus[0].info.memory_scaling = 2;
  const PodRequest twenty = Parse(MakePod("p", {{"nvidia.com/gpumem", 20480}}));
  FitScratch scratch;
  for (int placed = 0; placed < 2; ++placed) {
    EXPECT_TRUE(Fit(twenty, gpus, {}, scratch, nullptr)) << placed;
    EXPECT_EQ(ChargedMib(twenty, gpus, Policy::kBinpack, scratch), 20480u);
    FitCase o = FitPod(twenty, gpus);
    ASSERT_TRUE(o.fits) << placed << ": " << o.out.reason;
    EXPECT_EQ(o.out.allocation.containers[0].devices[0].memory_mib, 20480u);
    gpus[0].used_mib += o.out.charged_mib;
    gpus[0].pods += 1;
  }
  EXPECT_EQ(gpus[0].used_mib, 40960u) << "more than the GPU's 24576 MiB of physical memory";
  EXPECT_FALSE(Fit(twenty, gpus, {}, scratch, nullptr));
  EXPECT_FALSE(ChargedMib(twenty, gpus, Policy::kBinpack, scratch).has_value());
  FitCase third = FitPod(twenty, gpus);
  EXPECT_FALSE(third.fits);
  EXPECT_EQ(third.out.reason,
            "insufficient GPU memory: need 20480 MiB on 1 GPU, largest free 8192 MiB (GPU 0, "
            "SimGPU-24G, virtual memory 49152 MiB = 24576 MiB x 2)");
  // Without the scaling the second would not have fitted.
  std::vector<GpuSlot> plain = Uniform(1, "SimGPU-24G", 24576);
  plain[0].used_mib = 20480;
  EXPECT_FALSE(FitPod(twenty, plain).fits);
  // A percentage, and a request without memory, are of the virtual memory.
  std::vector<GpuSlot> empty = Uniform(1, "SimGPU-24G", 24576);
  empty[0].info.memory_scaling = 1.5;
  FitCase half = FitPod(Parse(MakePod("p", {{"nvidia.com/gpumem-percentage", 50}})), empty);
  ASSERT_TRUE(half.fits);
  EXPECT_EQ(half.out.allocation.containers[0].devices[0].memory_mib, 18432u);
  FitCase whole = FitPod(Parse(MakePod("p", {{"nvidia.com/gpu", 1}})), empty);
  ASSERT_TRUE(whole.fits);
  EXPECT_EQ(whole.out.allocation.containers[0].devices[0].memory_mib, 36864u);
  // Scores are of the virtual memory too: 40960 of 49152 MiB is 83% full.
  EXPECT_EQ(NodeScore(Policy::kBinpack, gpus, 0), 8);
}

TEST(NodeFit, NodeScores) {
  std::vector<GpuSlot> gpus = Uniform(2, "T4", 10000);
  gpus[0].used_mib = 5000;
  EXPECT_EQ(NodeScore(Policy::kBinpack, gpus, 5000), 5);
  EXPECT_EQ(NodeScore(Policy::kSpread, gpus, 5000), 5);
  EXPECT_EQ(NodeScore(Policy::kBinpack, gpus, 15000), 10);
  EXPECT_EQ(NodeScore(Policy::kSpread, gpus, 0), 7);  // 25% used rounds to 3
  EXPECT_EQ(NodeScore(Policy::kBinpack, {}, 0), 0);
}

}  // namespace
}  // namespace tessera::scheduler
