// The layout of simgpu's state file: one file, mmap'ed shared by every process that uses the same
// state directory (SIMGPU_STATE), like one machine's GPUs.
//
// Versioned: `layout_version` changes whenever any struct below changes; a process that finds a
// different magic, version or size refuses the file and says to run `simgpu reset`.
// Thread-safety: every field except `magic`, `layout_version`, `file_size`, `spec`, the device
// identities (written once before the file becomes visible) and `xid_seq` (atomic) is guarded by
// `mutex`, a robust process-shared mutex (see shared_state.h for how it is taken).
#pragma once

#include <pthread.h>

#include <cstdint>

namespace simgpu {

inline constexpr uint64_t kStateMagic = 0x31305550474d4953ull;  // "SIMGPU01"
inline constexpr uint32_t kLayoutVersion = 10;

inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcesses = 1024;     // processes with a context or memory at once
inline constexpr int kMaxPidStats = 1024;      // PIDs whose busy time a device remembers
inline constexpr int kSegmentCapacity = 4096;  // queued kernels per device
inline constexpr int kEndCapacity = 16384;     // ends of the last finished kernels per device
inline constexpr int kDeviceBuckets = 128;     // utilisation history, 10 ms each
inline constexpr uint64_t kDeviceBucketNs = 10'000'000;
// Per-PID utilisation history: one bucket per NVML process-sample period (the device's
// `nvml_period_ns`, 1/6 s by default: real drivers sample every 1/6 s to 1 s depending on the
// product), each PID's periods shifted by its own phase.
inline constexpr int kPidBuckets = 16;
inline constexpr int kXidCapacity = 256;
inline constexpr int kMaxIpcExports = 1024;       // allocations and events exported by IPC at once
inline constexpr int kMaxVmmShares = 512;         // VMM allocations exported at once
inline constexpr int kMaxVmmHolders = 16;         // processes holding one of them at once
inline constexpr uint64_t kGranule = 2ull << 20;  // allocation granularity
// MIG (mig_state.h): a GPU instance's id is fixed by its placement (0: all 8 memory slices, 1-2:
// the halves, 3-6: the quarters, 7-14: the eighths), so a GPU has at most 15 ids; compute
// instance ids inside a GPU instance are 0-7.
inline constexpr int kMaxGpuInstances = 15;
inline constexpr int kMaxComputeInstances = 8;
// A device's timelines (timeline.h): 0 the whole GPU's, 1 + gi * kMaxComputeInstances + ci a MIG
// device's (ProcessSlot::mig_instance's value).
inline constexpr int kMaxTimelines = 1 + kMaxGpuInstances * kMaxComputeInstances;

// Busy time that fell into one time bucket; `epoch` is the bucket's number (time / width).
struct Bucket {
  uint64_t epoch;
  uint64_t busy_ns;
};

// How a device shares itself between contexts that have work (SIMGPU_DEVICES sched=).
enum class SchedMode : uint32_t {
  kTimeSlice = 0,  // round robin over contexts, `timeslice_ns` each; a kernel is preempted at the
                   // end of its context's slice and resumes in that context's next slice
  kFifo = 1,       // one kernel at a time in launch order across all contexts, each to its end
};

// One queued kernel. `seq` numbers a device's launches from 1. Within a context, a kernel of lane
// L (its stream; see timeline.h) starts after the context's earlier kernels of lane L and of lane
// 0; a kernel of lane 0 after all of the context's earlier kernels.
struct Segment {
  uint64_t seq;
  uint64_t remaining_ns;  // device time it still needs
  uint64_t after_seq;     // 0, or the kernel of device `after_device` that must end first
  uint32_t ctx_id;        // StateFile::next_ctx_id's value for the launching context
  int32_t pid_stat;       // index into DeviceState::pids, or -1 when that table was full
  int32_t after_device;
  uint32_t done;  // finished (a hole until the ring's head passes it)
  uint32_t lane;  // 0: a barrier of its context (the legacy stream, or every kernel when serial)
  uint32_t join;  // a join point (no device time): ends as soon as its context's earlier kernels
  uint32_t timeline;  // the timeline it runs on: 0 the whole GPU, else a MIG device (kMaxTimelines)
  uint32_t reserved;
};

// Where one timeline's schedule stands (timeline.h): the whole GPU's, or a MIG device's, whose
// compute instance has SMs of its own and runs beside the others.
struct TimelineSchedule {
  uint32_t slice_ctx;       // the context holding the timeline (0: none)
  uint32_t slice_yielded;   // slice_ctx's slice ended because its work ran out or waited
  uint64_t slice_end_ns;    // when slice_ctx's slice ends
  uint64_t slice_start_ns;  // when its kernels may run (after the context switch's cost)
  uint64_t busy_ns;  // device time given to kernels on this timeline (since its instance was made)
};

// When kernel `seq` of a device ended (a ring indexed by seq % kEndCapacity).
struct KernelEnd {
  uint64_t seq;
  uint64_t end_ns;
};

// Device time used by one PID (elapsed time only: work still queued is not in here).
struct PidStat {
  int32_t pid;  // 0: free entry
  uint32_t reserved;
  uint64_t phase_ns;  // its NVML sample periods end at phase_ns + k * nvml_period_ns
  uint64_t busy_ns;
  uint64_t last_launch_ns;
  Bucket buckets[kPidBuckets];
};

// A compute instance of a GPU instance (a MIG device), indexed by its id.
struct MigComputeInstance {
  uint32_t live;
  uint32_t profile;  // NVML_COMPUTE_INSTANCE_PROFILE_* (also its profile id)
  uint32_t start;    // first compute slice inside the GPU instance
  uint32_t size;     // compute slices
};

// A GPU instance, indexed by its id (its placement, above).
struct MigGpuInstance {
  uint32_t live;
  uint32_t profile;  // NVML_GPU_INSTANCE_PROFILE_* index of the device's MIG table
  uint32_t start;    // first memory slice
  uint32_t size;     // memory slices
  MigComputeInstance cis[kMaxComputeInstances];
};

struct DeviceState {
  // Identity: written at creation, constant afterwards.
  char model[64];
  char uuid[48];        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  char pci_bus_id[32];  // NVML form "00000000:17:00.0"
  uint64_t memory_total;
  uint32_t sms;
  uint32_t pci_bus;
  uint32_t nvlink_group;  // its NVLink group (peer_topology.h; 0: none), constant after creation
  uint32_t reserved_identity;

  // Guarded by the mutex.
  uint32_t removed;  // `simgpu remove`: the GPU fell off the bus
  uint32_t reserved;
  // MIG (mig_state.h), for a model with a MIG table: the mode in effect and the one after the
  // next GPU reset (0 disabled, 1 enabled), and the GPU instances while MIG is on.
  uint32_t mig_mode;
  uint32_t mig_pending;
  MigGpuInstance gpu_instances[kMaxGpuInstances];
  uint64_t used_bytes;
  uint64_t peak_used_bytes;
  // Device time given to kernels so far (up to sched_now_ns), on all of its timelines together.
  uint64_t settled_busy_ns;
  // The schedule, advanced lazily (timeline.h). Mode and slice are constant after creation.
  SchedMode sched_mode;
  uint32_t reserved_sched;
  uint64_t timeslice_ns;
  uint64_t sched_now_ns;  // every timeline's schedule has been worked out up to here
  uint64_t switched_ns;   // device time spent switching contexts so far, all timelines
  TimelineSchedule timelines[kMaxTimelines];
  // A real GPU's imperfections (device_spec.h, Imperfections): constant after creation.
  uint32_t jitter_percent;
  uint32_t drift_percent;
  uint64_t drift_period_ns;
  uint64_t nvml_period_ns;
  uint64_t switch_ns;
  uint32_t nvml_mode;  // NvmlMode (device_spec.h)
  uint32_t streams_concurrent;
  uint32_t events_on_device;
  // A kernel's access to host memory takes this many times its time on device memory
  // (SIMGPU_DEVICES hostslow=, device_spec.h): constant after creation.
  uint32_t host_slowdown;
  uint64_t next_seq;       // the next launch's seq
  uint32_t segment_head;   // ring of queued kernels in launch order (finished ones are holes)
  uint32_t segment_count;  // from the head to the newest, holes included
  Segment segments[kSegmentCapacity];
  KernelEnd ends[kEndCapacity];
  Bucket buckets[kDeviceBuckets];
  PidStat pids[kMaxPidStats];
};

// A slot's process holds an open-file-description lock on byte kLivenessOffset + <slot index> of
// the state file while it lives, as a real driver's process holds its /dev/nvidia* descriptors:
// the kernel drops the lock as it closes the process's files, when the real driver frees its
// memory, whether the process exits or is killed.
inline constexpr uint32_t kSlotLivenessLock = 1;
inline constexpr uint64_t kLivenessOffset = 1ull << 30;  // past the file's end

// A process that holds contexts or memory. `start_time` (clock ticks since boot, from
// /proc/<pid>/stat) tells a live process from a later one that reuses the PID.
struct ProcessSlot {
  int32_t pid;     // 0: free slot
  uint32_t flags;  // kSlotLivenessLock, or 0: alive while its PID runs (not a zombie)
  uint64_t start_time;
  uint64_t used_bytes[kMaxDevices];
  // Host memory the process holds mapped for each device (pinned host allocations, host-located
  // VMM memory): real host pages, charged to no device (`simgpu stat` shows them).
  uint64_t host_bytes[kMaxDevices];
  uint32_t contexts[kMaxDevices];
  // Per device: 0, or the MIG device the process uses there (CUDA), as 1 + GPU instance id *
  // kMaxComputeInstances + compute instance id: its used_bytes on that device are that GPU
  // instance's (mig_state.h).
  uint32_t mig_instance[kMaxDevices];
};

struct XidEvent {
  uint64_t seq;
  uint32_t device;
  uint32_t xid;
  uint64_t time_ns;
};

// An allocation (cuIpcGetMemHandle) or an event (cuIpcGetEventHandle) that other processes may
// open by its handle, which carries `id`. It lives while its exporter does: the entry is stale once
// slot `owner_slot` no longer holds the process `owner_pid` started at `owner_start`, and the
// exporter clears it when it frees the allocation or destroys the event.
enum class IpcKind : uint32_t { kFree = 0, kMemory = 1, kEvent = 2 };
struct IpcExport {
  uint64_t id;  // from StateFile::next_ipc_id; never reused
  IpcKind kind;
  int32_t owner_slot;
  int32_t owner_pid;
  uint32_t device;
  uint64_t owner_start;
  uint64_t bytes;     // memory: the allocation's size as requested
  uint64_t last_seq;  // event: its last record waits for kernel `last_seq` of `device` (0: none)
};

// A process's references to a shared VMM allocation: its handles (created, imported, retained)
// that are not released, and its mappings.
struct VmmHolder {
  int32_t slot;  // -1: free
  int32_t pid;
  uint64_t start;
  uint64_t refs;
};

// A VMM allocation exported with cuMemExportToShareableHandle. Its memory lives while any process
// holds a reference. It is charged to its creator (`charged_slot`) while the creator holds it; if
// the creator lets go while others still hold it, the device still counts the memory but no
// process does (`charged_slot` -1, `orphaned` set), until the last holder lets go.
struct VmmShare {
  uint64_t id;  // 0: free entry
  uint32_t device;
  int32_t charged_slot;   // -1: no process is charged
  uint64_t bytes;         // device memory it holds (0 for a host location)
  uint64_t size;          // as created
  int32_t location_type;  // CUmemLocationType, as created (device: `device`)
  int32_t location_id;    // a host NUMA node's id
  uint32_t orphaned;      // counted in the device's used_bytes with no process charged
  uint32_t reserved;
  VmmHolder holders[kMaxVmmHolders];
};

// A multicast object (cuMulticastCreate). Its handles and their holders are a VmmShare with the
// same id (it holds no memory of its own); this is its team: the devices added and bound.
inline constexpr int kMaxMulticasts = 128;
struct Multicast {
  uint64_t id;  // 0: free entry
  uint64_t size;
  uint32_t num_devices;
  uint32_t added;  // bit per physical device
  uint32_t bound;  // bit per physical device with memory bound
  uint32_t reserved;
};

struct StateFile {
  uint64_t magic;
  uint32_t layout_version;
  uint32_t device_count;
  uint64_t file_size;
  uint64_t ctx_memory;
  char spec[1024];  // DeviceSpec::Canonical() of the machine this file simulates

  pthread_mutex_t mutex;
  uint64_t last_sweep_ns;
  uint64_t xid_seq;            // number of Xid events so far; read without the lock (atomic)
  uint32_t process_slots_end;  // no slot at or after this index has ever been used
  uint32_t next_ctx_id;        // the id of the next context created (from 1)
  // CLOCK_REALTIME minus CLOCK_MONOTONIC in us when the file was made: NVML sample stamps are
  // monotonic period ends moved by it, so a period has one stamp in every process and call.
  int64_t realtime_offset_us;
  uint32_t pcie_peers;  // devices outside one NVLink group reach each other over PCIe (constant)
  uint32_t reserved_peers;
  uint64_t next_ipc_id;  // the id of the next IPC export (from 1)
  XidEvent xids[kXidCapacity];
  IpcExport ipc_exports[kMaxIpcExports];
  VmmShare vmm_shares[kMaxVmmShares];
  Multicast multicasts[kMaxMulticasts];
  ProcessSlot processes[kMaxProcesses];
  DeviceState devices[kMaxDevices];
};

}  // namespace simgpu
