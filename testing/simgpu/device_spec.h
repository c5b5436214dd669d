// DeviceSpec: the simulated machine's GPUs, parsed from SIMGPU_DEVICES.
//
// Two forms, items separated by ',' or ';':
//   count=2,memory=16GiB,sms=108,model=SimGPU      identical devices (defaults: 1, 16GiB, 108,
//   SimGPU) gpu=SimGPU-3090:24268MiB:82;gpu=SimGPU-H200:141GiB:132   one `gpu=MODEL:MEMORY:SMS` per
//   device
// A model may name a real MIG-capable GPU (KnownGpu below: `H100`, `A100-40GB`, `A100-80GB`,
// `H100-PCIe`, `H200`, or its NVML name): the device then carries that NVML name, and the GPU's
// memory and SMs unless memory=/sms= (or MEMORY:SMS) say otherwise; `gpu=H100` alone is one.
// Both forms accept `ctxmem=SIZE` (device memory one context costs, default 0), `sched=timeslice`
// (default) or `sched=fifo` (how a device shares itself between contexts, timeline.h) and
// `timeslice=DURATION` (a context's slice when time-sliced: 100us to 1s, default 2ms; units ns,
// us, ms, s). Sizes take B, KiB, MiB, GiB, TiB (also K/M/G/T and KB/MB/GB/TB, all powers of 1024)
// or plain bytes.
//
// A real GPU's imperfections (docs/simgpu.md, "Imperfections"), each a key whose default is the
// realistic value:
//   jitter=PERCENT       per-launch kernel-time variation, 0 to 50 (default 5; rare outliers too)
//   drift=PERCENT        slow change of the device's speed (clocks), 0 to 50 (default 10)
//   driftperiod=DURATION one cycle of that change, 1s to 1h (default 20s)
//   nvml=own|one|aligned NVML per-process samples: each process on its own sampling phase
//                        (default), one process per device-wide instant, the one running then,
//                        with its share of the last second (as an H200 with driver 580 does), or
//                        all stamped with one shared period end
//   nvmlperiod=DURATION  NVML's sample period, 10ms to 2s (default 1/6 s)
//   switch=DURATION      a context switch's cost when time-sliced, 0 to 10ms (default 25us)
//   streams=concurrent|serial  kernels of one context on different streams overlap (default) or
//                        run one at a time
//   events=device|host   an event recorded on an idle stream is stamped when the device next runs
//                        the context (default) or at the host's record call
// `peers=pcie|none|nvlink|nvlink:A-B/C-D`: which devices reach each other's memory directly
// (peer_topology.h; default pcie).
// `hostslow=F` (1 to 10000, default kDefaultHostSlowdown): a kernel reading host memory the device
// maps (pinned host allocations, host-located VMM memory) takes F times as long as on device
// memory (`touch_<N>ns` kernels, kernel_timing.h).
// `profile=ideal` sets all of them to the idealised values simgpu had before (jitter=0, drift=0,
// nvml=aligned, switch=0, streams=serial, events=host); keys given after it override it.
//
// Thread-compatible: plain values, no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "peer_topology.h"
#include "state_layout.h"

namespace simgpu {

inline constexpr uint64_t kDefaultTimesliceNs = 2'000'000;
inline constexpr uint64_t kDefaultNvmlPeriodNs = 1'000'000'000 / 6;
// An H200's HBM3e (4.8 TB/s) against PCIe Gen5 x16 (64 GB/s a direction), which a kernel's
// zero-copy reads of host memory cross: 4800 / 64 = 75 (docs/simgpu.md, "Host memory").
inline constexpr uint32_t kDefaultHostSlowdown = 75;

// How NVML's per-process samples are taken (docs/simgpu.md, "Imperfections"): kOwn, every
// process on a phase of its own; kOne, one process per device-wide instant, as an H200 with
// driver 580 does; kAligned, every process at one period end. The values are the state file's.
enum class NvmlMode : uint32_t { kAligned = 0, kOwn = 1, kOne = 2 };

// "one", "own" or "aligned", as SIMGPU_DEVICES spells it.
std::string NvmlModeName(NvmlMode mode);

// How far a simulated device departs from an ideal one (DeviceState holds a copy).
struct Imperfections {
  uint32_t jitter_percent = 5;
  uint32_t drift_percent = 10;
  uint64_t drift_period_ns = 20'000'000'000;
  NvmlMode nvml_mode = NvmlMode::kOwn;
  uint64_t nvml_period_ns = kDefaultNvmlPeriodNs;
  uint64_t switch_ns = 25'000;
  bool streams_concurrent = true;
  bool events_on_device = true;

  static Imperfections Ideal() {
    return Imperfections{0, 0,     20'000'000'000, NvmlMode::kAligned, kDefaultNvmlPeriodNs,
                         0, false, false};
  }
};

// A real GPU simgpu knows by name: its NVML name, memory and SMs as NVML reports them, and the key
// of its MIG table (src/mig's FindModel).
struct KnownGpu {
  const char* alias;    // SIMGPU_DEVICES's short name: "H100"
  const char* mig_key;  // "H100-SXM5-80GB"
  uint64_t memory_mib;  // nvmlDeviceGetMemoryInfo's total
  uint32_t sms;
};

// The known GPU `name` names: an alias or anything src/mig's FindModel takes (a MIG table key or
// an NVML name), case, spaces, '-' and '_' ignored; nullptr otherwise.
const KnownGpu* FindKnownGpu(std::string_view name);

// Every known GPU, in a fixed order.
const std::vector<KnownGpu>& KnownGpus();

struct DeviceModel {
  std::string model;
  uint64_t memory_bytes = 0;
  uint32_t sms = 0;
};

struct DeviceSpec {
  std::vector<DeviceModel> devices;
  uint64_t ctx_memory_bytes = 0;
  SchedMode sched = SchedMode::kTimeSlice;
  uint64_t timeslice_ns = kDefaultTimesliceNs;
  Imperfections imperfections;
  PeerTopology peers;                             // peers=
  uint32_t host_slowdown = kDefaultHostSlowdown;  // hostslow=

  // A normalised text that is equal for equal machines ("gpu=A:1024:8;ctxmem=0;sched=timeslice;
  // timeslice=2000000ns;jitter=5;drift=10;driftperiod=20000000000ns;nvml=own;
  // nvmlperiod=166666666ns;switch=25000ns;streams=concurrent;events=device;peers=pcie;
  // hostslow=75").
  std::string Canonical() const;
};

// Parses `text` (the value of SIMGPU_DEVICES; empty means the defaults). On error the message names
// the item that is wrong and what is allowed.
tessera::Result<DeviceSpec> ParseDeviceSpec(std::string_view text);

// Parses a duration such as "2ms", "500us", "1s" or "2000000ns" (a unit is required).
tessera::Result<uint64_t> ParseDurationNs(std::string_view text);

// Parses a size such as "16GiB", "24268MiB", "512M" or "1048576".
tessera::Result<uint64_t> ParseSize(std::string_view text);

}  // namespace simgpu
