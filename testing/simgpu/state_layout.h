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
inline constexpr uint32_t kLayoutVersion = 2;

inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcesses = 1024;     // processes with a context or memory at once
inline constexpr int kMaxPidStats = 1024;      // PIDs whose busy time a device remembers
inline constexpr int kSegmentCapacity = 4096;  // queued kernel segments per device
inline constexpr int kDeviceBuckets = 128;     // utilisation history, 10 ms each
inline constexpr uint64_t kDeviceBucketNs = 10'000'000;
// Per-PID utilisation history: one bucket per NVML process-sample period. Real drivers sample
// every 1/6 s to 1 s depending on the product; simgpu uses the shortest, 1/6 s.
inline constexpr int kPidBuckets = 16;
inline constexpr uint64_t kPidBucketNs = 1'000'000'000 / 6;
inline constexpr int kXidCapacity = 256;
inline constexpr uint64_t kGranule = 2ull << 20;  // allocation granularity

// Busy time that fell into one time bucket; `epoch` is the bucket's number (time / width).
struct Bucket {
  uint64_t epoch;
  uint64_t busy_ns;
};

// Kernels of one PID that run back to back on a device: [start_ns, end_ns) on CLOCK_MONOTONIC.
struct Segment {
  uint64_t start_ns;
  uint64_t end_ns;
  int32_t pid_stat;  // index into DeviceState::pids, or -1 when that table was full
  uint32_t reserved;
};

// Device time used by one PID (elapsed time only: work still queued is not in here).
struct PidStat {
  int32_t pid;  // 0: free entry
  uint32_t reserved;
  uint64_t busy_ns;
  uint64_t last_launch_ns;
  Bucket buckets[kPidBuckets];
};

struct DeviceState {
  // Identity: written at creation, constant afterwards.
  char model[64];
  char uuid[48];        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  char pci_bus_id[32];  // NVML form "00000000:17:00.0"
  uint64_t memory_total;
  uint32_t sms;
  uint32_t pci_bus;

  // Guarded by the mutex.
  uint32_t removed;  // `simgpu remove`: the GPU fell off the bus
  uint32_t reserved;
  uint64_t used_bytes;
  uint64_t peak_used_bytes;
  uint64_t busy_until_ns;    // end of the last queued kernel
  uint64_t settled_busy_ns;  // device time of segments that have finished
  uint32_t segment_head;     // ring of queued or running segments, oldest first
  uint32_t segment_count;
  Segment segments[kSegmentCapacity];
  Bucket buckets[kDeviceBuckets];
  PidStat pids[kMaxPidStats];
};

// A process that holds contexts or memory. `start_time` (clock ticks since boot, from
// /proc/<pid>/stat) tells a live process from a later one that reuses the PID.
struct ProcessSlot {
  int32_t pid;  // 0: free slot
  uint32_t reserved;
  uint64_t start_time;
  uint64_t used_bytes[kMaxDevices];
  uint32_t contexts[kMaxDevices];
};

struct XidEvent {
  uint64_t seq;
  uint32_t device;
  uint32_t xid;
  uint64_t time_ns;
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
  uint32_t reserved;
  // CLOCK_REALTIME minus CLOCK_MONOTONIC in us when the file was made: NVML sample stamps are
  // monotonic period ends moved by it, so a period has one stamp in every process and call.
  int64_t realtime_offset_us;
  XidEvent xids[kXidCapacity];
  ProcessSlot processes[kMaxProcesses];
  DeviceState devices[kMaxDevices];
};

}  // namespace simgpu
