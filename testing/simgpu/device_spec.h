// DeviceSpec: the simulated machine's GPUs, parsed from SIMGPU_DEVICES.
//
// Two forms, items separated by ',' or ';':
//   count=2,memory=16GiB,sms=108,model=SimGPU      identical devices (defaults: 1, 16GiB, 108,
//   SimGPU) gpu=SimGPU-3090:24268MiB:82;gpu=SimGPU-H200:141GiB:132   one `gpu=MODEL:MEMORY:SMS` per
//   device
// Both forms accept `ctxmem=SIZE` (device memory one context costs, default 0), `sched=timeslice`
// (default) or `sched=fifo` (how a device shares itself between contexts, timeline.h) and
// `timeslice=DURATION` (a context's slice when time-sliced: 100us to 1s, default 2ms; units ns,
// us, ms, s). Sizes take B, KiB, MiB, GiB, TiB (also K/M/G/T and KB/MB/GB/TB, all powers of 1024)
// or plain bytes.
//
// Thread-compatible: plain values, no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "state_layout.h"

namespace simgpu {

inline constexpr uint64_t kDefaultTimesliceNs = 2'000'000;

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

  // A normalised text that is equal for equal machines
  // ("gpu=A:1024:8;ctxmem=0;sched=timeslice;timeslice=2000000ns").
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
