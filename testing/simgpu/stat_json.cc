#include "stat_json.h"

#include <nlohmann/json.hpp>

#include "clock.h"
#include "device_spec.h"
#include "mig_state.h"
#include "timeline.h"

namespace simgpu {
namespace {

// A MIG-capable GPU's mode and instances: {"mode":0|1,"pending":0|1,"gpu_instances":[{"id",
// "profile","start","size","used_bytes","compute_instances":[{"id","slices","start","uuid",
// "busy_ns"}]}]}: a compute instance's busy_ns is the device time given on its own timeline.
nlohmann::json MigJson(const StateFile& file, int i) {
  const DeviceState& d = file.devices[i];
  nlohmann::json gis = nlohmann::json::array();
  for (int g = 0; g < kMaxGpuInstances; ++g) {
    const MigGpuInstance& gi = d.gpu_instances[g];
    if (!gi.live) continue;
    nlohmann::json cis = nlohmann::json::array();
    for (int c = 0; c < kMaxComputeInstances; ++c) {
      if (!gi.cis[c].live) continue;
      cis.push_back({{"id", c},
                     {"slices", gi.cis[c].size},
                     {"start", gi.cis[c].start},
                     {"uuid", MigDeviceUuid(d, g, c)},
                     {"busy_ns", TimelineBusyNs(d, MigSlotValue(g, c))}});
    }
    gis.push_back({{"id", g},
                   {"profile", GiProfile(d, gi).name},
                   {"start", gi.start},
                   {"size", gi.size},
                   {"used_bytes", GpuInstanceUsed(file, i, g)},
                   {"compute_instances", cis}});
  }
  return {{"mode", d.mig_mode}, {"pending", d.mig_pending}, {"gpu_instances", gis}};
}

}  // namespace

std::string StatJson(SharedState& state) {
  nlohmann::json devices = nlohmann::json::array();
  SharedState::Lock lock(state);
  state.Sweep(lock, SharedState::SweepMode::kFull);
  uint64_t now = NowNs();
  for (int i = 0; i < state.device_count(); ++i) {
    DeviceState& d = state.file().devices[i];
    AdvanceDevice(state.file(), i, now);
    nlohmann::json by_pid = nlohmann::json::object();
    for (int k = 0; k < kMaxPidStats; ++k) {
      if (d.pids[k].pid == 0) continue;
      by_pid[std::to_string(d.pids[k].pid)] = PidBusyNs(d, k);
    }
    // Host memory each process holds mapped for the device (pinned, host-located VMM): not device
    // memory, so not in used_bytes.
    nlohmann::json host_by_pid = nlohmann::json::object();
    uint64_t host_total = 0;
    for (int k = 0; k < kMaxProcesses; ++k) {
      const ProcessSlot& p = state.file().processes[k];
      if (p.pid == 0 || p.host_bytes[i] == 0) continue;
      host_by_pid[std::to_string(p.pid)] = p.host_bytes[i];
      host_total += p.host_bytes[i];
    }
    uint64_t busy_last_second = BusyInWindow(d, now, 1'000'000'000ull);
    devices.push_back({
        {"index", i},
        {"uuid", d.uuid},
        {"model", d.model},
        {"pci_bus_id", d.pci_bus_id},
        {"sms", d.sms},
        {"removed", d.removed != 0},
        {"sched", d.sched_mode == SchedMode::kFifo ? "fifo" : "timeslice"},
        {"timeslice_ns", d.sched_mode == SchedMode::kFifo ? 0 : d.timeslice_ns},
        {"imperfections",
         {{"jitter_percent", d.jitter_percent},
          {"drift_percent", d.drift_percent},
          {"drift_period_ns", d.drift_period_ns},
          {"nvml", NvmlModeName(static_cast<NvmlMode>(d.nvml_mode))},
          {"nvml_period_ns", d.nvml_period_ns},
          {"switch_ns", d.switch_ns},
          {"streams", d.streams_concurrent ? "concurrent" : "serial"},
          {"events", d.events_on_device ? "device" : "host"}}},
        {"memory_total", d.memory_total},
        {"used_bytes", d.used_bytes},
        {"peak_used_bytes", d.peak_used_bytes},
        {"host_slowdown", d.host_slowdown},
        {"host_mapped_bytes", host_total},
        {"host_mapped_bytes_by_pid", host_by_pid},
        {"busy_ns", BusyNs(d)},
        {"switched_ns", SwitchedNs(d)},
        {"busy_ns_by_pid", by_pid},
        {"utilization_gpu", std::min<uint64_t>(100, busy_last_second / 10'000'000)},
    });
    if (MigModel(d) != nullptr) devices.back()["mig"] = MigJson(state.file(), i);
  }
  return nlohmann::json{{"devices", devices}}.dump();
}

}  // namespace simgpu
