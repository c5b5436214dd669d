#include "device_spec.h"

#include <gtest/gtest.h>

namespace simgpu {
namespace {

TEST(SimgpuDeviceSpec, DefaultsToOneSixteenGiBDevice) {
  auto spec = ParseDeviceSpec("");
  ASSERT_TRUE(spec.ok());
  ASSERT_EQ(spec->devices.size(), 1u);
  EXPECT_EQ(spec->devices[0].model, "SimGPU");
  EXPECT_EQ(spec->devices[0].memory_bytes, 16ull << 30);
  EXPECT_EQ(spec->devices[0].sms, 108u);
  EXPECT_EQ(spec->ctx_memory_bytes, 0u);
}

TEST(SimgpuDeviceSpec, UniformForm) {
  auto spec = ParseDeviceSpec("count=2,memory=24GiB,sms=82,model=SimGPU-3090,ctxmem=300MiB");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[1].model, "SimGPU-3090");
  EXPECT_EQ(spec->devices[1].memory_bytes, 24ull << 30);
  EXPECT_EQ(spec->ctx_memory_bytes, 300ull << 20);
}

TEST(SimgpuDeviceSpec, MixedForm) {
  auto spec = ParseDeviceSpec("gpu=SimGPU-3090:24268MiB:82;gpu=SimGPU-H200:141GiB:132;ctxmem=1G");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[0].memory_bytes, 24268ull << 20);
  EXPECT_EQ(spec->devices[1].model, "SimGPU-H200");
  EXPECT_EQ(spec->devices[1].sms, 132u);
  EXPECT_EQ(spec->ctx_memory_bytes, 1ull << 30);
  EXPECT_EQ(spec->Canonical(),
            "gpu=SimGPU-3090:25446842368:82;gpu=SimGPU-H200:151397597184:132;ctxmem=1073741824;"
            "sched=timeslice;timeslice=2000000ns;jitter=5;drift=10;driftperiod=20000000000ns;"
            "nvml=own;nvmlperiod=166666666ns;switch=25000ns;streams=concurrent;events=device;"
            "peers=pcie;hostslow=75");
}

TEST(SimgpuDeviceSpec, KnownGpusCarryTheirNvmlNameMemoryAndSms) {
  auto spec = ParseDeviceSpec("count=2,model=H100");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[1].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(spec->devices[1].memory_bytes, 81559ull << 20);
  EXPECT_EQ(spec->devices[1].sms, 132u);

  struct Case {
    const char* text;
    const char* model;
    uint64_t memory_mib;
    uint32_t sms;
  } cases[] = {
      {"model=a100-40gb", "NVIDIA A100-SXM4-40GB", 40960, 108},
      {"model=A100_80GB", "NVIDIA A100-SXM4-80GB", 81920, 108},
      {"model=H100-PCIe", "NVIDIA H100 PCIe", 81559, 114},
      {"model=H200", "NVIDIA H200", 143771, 132},
      {"model=NVIDIA H200 NVL", "NVIDIA H200", 143771, 132},          // by NVML name
      {"model=H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", 81559, 132},  // by MIG table key
      {"gpu=H100", "NVIDIA H100 80GB HBM3", 81559, 132},
      {"gpu=H100:96GiB:140", "NVIDIA H100 80GB HBM3", 96 * 1024, 140},
      {"model=H100,sms=100", "NVIDIA H100 80GB HBM3", 81559, 100},
  };
  for (const Case& c : cases) {
    auto parsed = ParseDeviceSpec(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->devices[0].model, c.model) << c.text;
    EXPECT_EQ(parsed->devices[0].memory_bytes, c.memory_mib << 20) << c.text;
    EXPECT_EQ(parsed->devices[0].sms, c.sms) << c.text;
  }

  auto mixed = ParseDeviceSpec("gpu=H100;gpu=SimGPU:16GiB:108");
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->devices[1].model, "SimGPU");

  auto small = ParseDeviceSpec("model=H200,memory=100GiB");
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("needs at least 142976MiB"), std::string::npos)
      << small.status().message();
  auto unknown = ParseDeviceSpec("gpu=B200");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("known: A100-40GB"), std::string::npos);
}

TEST(SimgpuDeviceSpec, EqualMachinesHaveEqualCanonicalText) {
  auto a = ParseDeviceSpec("count=2,memory=16384MiB");
  auto b = ParseDeviceSpec("gpu=SimGPU:16GiB:108;gpu=SimGPU:17179869184:108");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Canonical(), b->Canonical());
}

TEST(SimgpuDeviceSpec, ErrorsNameTheProblem) {
  struct Case {
    const char* text;
    const char* message_part;
  } cases[] = {
      {"count=0", "count=0 is not a whole number from 1 to 16"},
      {"count=17", "from 1 to 16"},
      {"memory=lots", "is not a number with an optional unit"},
      {"memory=1MiB", "at least 2MiB"},
      {"colour=blue", "unknown key 'colour'"},
      {"count", "is not KEY=VALUE"},
      {"gpu=A:1GiB", "is not gpu=MODEL:MEMORY:SMS"},
      {"gpu=A:1GiB:8,count=2", "not both"},
      {"model=a:b", "may not contain"},
      {"sched=mps", "sched=mps is neither 'timeslice'"},
      {"timeslice=2", "is not a number with a unit ns, us, ms or s"},
      {"timeslice=50us", "timeslice=50us is outside 100us to 1s"},
      {"timeslice=2s", "outside 100us to 1s"},
      {"sched=fifo,timeslice=1ms", "timeslice= applies to sched=timeslice only"},
  };
  for (const Case& c : cases) {
    auto spec = ParseDeviceSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.status().message().find(c.message_part), std::string::npos)
        << c.text << ": " << spec.status().message();
  }
}

TEST(SimgpuDeviceSpec, SchedulingDefaultsToTwoMillisecondSlices) {
  auto spec = ParseDeviceSpec("count=1");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->sched, SchedMode::kTimeSlice);
  EXPECT_EQ(spec->timeslice_ns, 2'000'000u);
  auto fifo = ParseDeviceSpec("count=1,sched=FIFO");
  ASSERT_TRUE(fifo.ok());
  EXPECT_EQ(fifo->sched, SchedMode::kFifo);
  EXPECT_EQ(fifo->Canonical(),
            "gpu=SimGPU:17179869184:108;ctxmem=0;sched=fifo;jitter=5;drift=10;"
            "driftperiod=20000000000ns;nvml=own;nvmlperiod=166666666ns;switch=25000ns;"
            "streams=concurrent;events=device;peers=pcie;hostslow=75");
  auto slice = ParseDeviceSpec("count=1;sched=timeslice;timeslice=500us");
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->timeslice_ns, 500'000u);
  EXPECT_NE(slice->Canonical(), spec->Canonical());  // another machine: refused by a live state
  EXPECT_EQ(*ParseDurationNs("1s"), 1'000'000'000u);
  EXPECT_EQ(*ParseDurationNs("2000000ns"), 2'000'000u);
}

TEST(SimgpuDeviceSpec, ImperfectionsDefaultToARealGpu) {
  auto spec = ParseDeviceSpec("count=1");
  ASSERT_TRUE(spec.ok());
  const Imperfections& m = spec->imperfections;
  EXPECT_EQ(m.jitter_percent, 5u);
  EXPECT_EQ(m.drift_percent, 10u);
  EXPECT_EQ(m.drift_period_ns, 20'000'000'000u);
  EXPECT_EQ(m.nvml_mode, NvmlMode::kOwn);
  EXPECT_EQ(m.nvml_period_ns, 1'000'000'000u / 6);
  EXPECT_EQ(m.switch_ns, 25'000u);
  EXPECT_TRUE(m.streams_concurrent);
  EXPECT_TRUE(m.events_on_device);
}

TEST(SimgpuDeviceSpec, ImperfectionKeys) {
  auto spec = ParseDeviceSpec(
      "count=1,jitter=12%,drift=0,driftperiod=5s,nvml=ALIGNED,nvmlperiod=1s,switch=100us,"
      "streams=serial,events=host");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Imperfections& m = spec->imperfections;
  EXPECT_EQ(m.jitter_percent, 12u);
  EXPECT_EQ(m.drift_percent, 0u);
  EXPECT_EQ(m.drift_period_ns, 5'000'000'000u);
  EXPECT_EQ(m.nvml_mode, NvmlMode::kAligned);
  EXPECT_EQ(m.nvml_period_ns, 1'000'000'000u);
  EXPECT_EQ(m.switch_ns, 100'000u);
  EXPECT_FALSE(m.streams_concurrent);
  EXPECT_FALSE(m.events_on_device);
}

TEST(SimgpuDeviceSpec, IdealProfileThenOverrides) {
  auto ideal = ParseDeviceSpec("profile=ideal");
  ASSERT_TRUE(ideal.ok());
  const Imperfections& m = ideal->imperfections;
  EXPECT_EQ(m.jitter_percent, 0u);
  EXPECT_EQ(m.drift_percent, 0u);
  EXPECT_EQ(m.nvml_mode, NvmlMode::kAligned);
  EXPECT_EQ(m.switch_ns, 0u);
  EXPECT_FALSE(m.streams_concurrent);
  EXPECT_FALSE(m.events_on_device);
  auto jittery = ParseDeviceSpec("profile=ideal,jitter=5");
  ASSERT_TRUE(jittery.ok());
  EXPECT_EQ(jittery->imperfections.jitter_percent, 5u);
  EXPECT_EQ(jittery->imperfections.nvml_mode, NvmlMode::kAligned);
  EXPECT_EQ(ParseDeviceSpec("nvml=one")->imperfections.nvml_mode, NvmlMode::kOne);
  EXPECT_NE(ideal->Canonical(), jittery->Canonical());
}

TEST(SimgpuDeviceSpec, BadImperfectionsSayWhatIsAllowed) {
  struct Case {
    const char* text;
    const char* message_part;
  };
  const Case cases[] = {
      {"jitter=51", "whole percent from 0 to 50"},
      {"drift=-1", "whole percent from 0 to 50"},
      {"driftperiod=10ms", "outside 1s to 1h"},
      {"nvml=sometimes", "none of 'one' (one process per sample instant), 'own'"},
      {"nvmlperiod=5ms", "outside 10ms to 2s"},
      {"switch=11ms", "outside 0 to 10ms"},
      {"switch=5", "unit ns, us, ms or s"},
      {"streams=parallel", "neither 'concurrent' nor 'serial'"},
      {"events=gpu", "neither 'device' nor 'host'"},
      {"profile=real", "is not 'ideal'"},
  };
  for (const Case& c : cases) {
    auto spec = ParseDeviceSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.status().message().find(c.message_part), std::string::npos)
        << c.text << ": " << spec.status().message();
  }
}

TEST(SimgpuDeviceSpec, Sizes) {
  EXPECT_EQ(*ParseSize("512"), 512u);
  EXPECT_EQ(*ParseSize("2k"), 2048u);
  EXPECT_EQ(*ParseSize("3MB"), 3ull << 20);
  EXPECT_EQ(*ParseSize("1TiB"), 1ull << 40);
  EXPECT_FALSE(ParseSize("99999999999T").ok());
  EXPECT_FALSE(ParseSize("-1").ok());
}

}  // namespace
TEST(DeviceSpecTest, PeersDescribeTheTopology) {
  auto pcie = ParseDeviceSpec("count=4");
  ASSERT_TRUE(pcie.ok());
  EXPECT_TRUE(pcie->peers.pcie);
  EXPECT_EQ(pcie->peers.GroupOf(2, 4), 0u);
  auto groups = ParseDeviceSpec("count=8,peers=nvlink:0-3/4-7");
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  EXPECT_EQ(groups->peers.GroupOf(3, 8), 1u);
  EXPECT_EQ(groups->peers.GroupOf(4, 8), 2u);
  EXPECT_EQ(groups->peers.Canonical(), "nvlink:0-3/4-7");
  auto all = ParseDeviceSpec("count=2;peers=NVLink");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->peers.GroupOf(1, 2), 1u);
  auto none = ParseDeviceSpec("count=2,peers=none");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->peers.pcie);
  EXPECT_NE(none->Canonical(), pcie->Canonical());
  auto past = ParseDeviceSpec("count=2,peers=nvlink:0-3");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("names device 3, but the machine has 2"),
            std::string::npos)
      << past.status().message();
  auto overlap = ParseDeviceSpec("count=4,peers=nvlink:0-2/2-3");
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.status().message().find("two NVLink groups"), std::string::npos);
  auto bad = ParseDeviceSpec("count=2,peers=fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'pcie'"), std::string::npos) << bad.status().message();
}

TEST(SimgpuDeviceSpec, HostSlowdownIsAMachineKey) {
  auto plain = ParseDeviceSpec("count=1");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host_slowdown, kDefaultHostSlowdown);
  // Not an imperfection: profile=ideal keeps it, and it tells machines apart.
  auto slow = ParseDeviceSpec("count=1,profile=ideal,hostslow=10");
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_EQ(slow->host_slowdown, 10u);
  EXPECT_NE(slow->Canonical().find(";hostslow=10"), std::string::npos) << slow->Canonical();
  auto ideal = ParseDeviceSpec("count=1,profile=ideal");
  ASSERT_TRUE(ideal.ok());
  EXPECT_EQ(ideal->host_slowdown, kDefaultHostSlowdown);
  for (const char* bad : {"count=1,hostslow=0", "count=1,hostslow=10001", "count=1,hostslow=2.5"}) {
    auto r = ParseDeviceSpec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("hostslow="), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("from 1 to 10000"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace simgpu
