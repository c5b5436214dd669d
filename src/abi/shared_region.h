/* The shared region: one memory-mapped file per container (per claim under DRA), shared by every
 * process of it that loads libtessera-cuda.so, and read by the node agent's metrics exporter.
 *
 * Location: `region=` in the limits file, else CUDA_DEVICE_MEMORY_SHARED_CACHE, else
 * TESSERA_REGION_DEFAULT_PATH; created by the first process (mode 0666) and sized to
 * TESSERA_REGION_FILE_SIZE: the fixed part (struct tessera_region, whose size total_size
 * records), then the spill appendix (below). A reader checks `magic` and `version` and refuses any
 * other version. A change to a field's meaning or place bumps TESSERA_REGION_VERSION; a field taken
 * from `reserved` space keeps it when zero means what it meant before ("nothing yet"). Fields are
 * naturally aligned fixed-width integers, little-endian, x86-64 / aarch64 layout
 * (src/hook/tests/region_layout_test.cc pins them), written with atomic operations; `lock`
 * serialises only claiming and freeing slots. Readers without the lock may see a value a few
 * allocations old, never a torn 64-bit value.
 *
 * Protocol and history: docs/in-container-library.md, "The shared region". */
#ifndef TESSERA_ABI_SHARED_REGION_H_
#define TESSERA_ABI_SHARED_REGION_H_

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSERA_REGION_MAGIC 0x3147455241535354ULL /* "TSSAREG1" read as little-endian bytes */
#define TESSERA_REGION_VERSION 1u
#define TESSERA_REGION_MAX_DEVICES 16
#define TESSERA_REGION_MAX_SLOTS 1024
#define TESSERA_REGION_DEFAULT_PATH "/tmp/tessera-cuda.region"

/* One device as the container sees it (index = container device index). */
struct tessera_region_device {
  uint64_t limit_bytes;   /* memory limit last registered by a process (0 = none) */
  uint64_t used_bytes;    /* sum of slots[].used_bytes[index] of live slots (or more: above) */
  uint64_t peak_bytes;    /* highest used_bytes seen since the region was created */
  uint64_t context_bytes; /* device memory one context costs, as measured (0 = not measured) */
  uint32_t cores_percent; /* compute limit (0 = none); used by the compute limiter */
  /* The compute loop's last steps all one way (compute_loop.h, loop_gains; 0: none). */
  int32_t compute_gain_streak;
  /* Compute limiter (src/hook/compute.c), changed only with atomic operations, never under
   * `lock`. Both are CLOCK_MONOTONIC nanoseconds; 0 in a fresh region means "nothing yet". */
  uint64_t compute_tat_ns;       /* end of the virtual time the container has been granted */
  uint64_t compute_contended_ns; /* elastic: treat the device as contended until this time */
  /* The feedback loop on NVML's per-process utilisation (src/hook/compute_loop.h). Times in
   * CLOCK_REALTIME microseconds (NVML stamps its samples so). */
  uint64_t reserved3;              /* unused (was compute_estimated_ns) */
  uint32_t compute_gain;           /* every charge is multiplied by it, in 1/65536 (0 = 1.0) */
  uint32_t compute_gain_recent;    /* the gain averaged over the loop's window, likewise */
  uint64_t compute_poll_us;        /* when the last poll of NVML started (elects the poller) */
  uint64_t compute_waited_ns;      /* time the container's launches slept on the budget */
  uint64_t compute_poll_waited_ns; /* compute_waited_ns at the last step */
  uint64_t compute_gain_us;        /* when the gain last moved (0: never) */
  uint64_t compute_start_us;       /* the container's first launch (0: not yet) */
  uint64_t compute_sample_us;      /* the newest sample the gain last moved on (0: none) */
  /* When the loop's steps all one way began (compute_loop.h, loop_gains; CLOCK_REALTIME us). Was
   * compute_changed_us: an older region may hold a time there, with compute_gain_streak 0. */
  uint64_t compute_streak_us;
};

/* The slot's process holds an open-file-description lock (F_OFD_SETLK, F_WRLCK) on byte
 * TESSERA_REGION_LIVENESS_OFFSET + <slot index> of the region file for as long as it holds the
 * slot. The kernel drops the lock when the process dies, whatever PID namespace it or the reader
 * is in: a reader tells a live slot from a dead one with F_OFD_GETLK, where a PID from another
 * namespace means nothing. */
#define TESSERA_SLOT_LIVENESS_LOCK 1u
/* Past the region's end: the liveness locks cover no byte the region uses. */
#define TESSERA_REGION_LIVENESS_OFFSET (1ull << 30)

/* Fills `fl` with slot `slot`'s liveness lock of `type` (F_WRLCK to take or test it, F_UNLCK to
 * give it back), for fcntl's F_OFD_SETLK and F_OFD_GETLK. */
static inline void tessera_slot_liveness_flock(struct flock* fl, int slot, short type) {
  memset(fl, 0, sizeof(*fl));
  fl->l_type = type;
  fl->l_whence = SEEK_SET;
  fl->l_start = (off_t)(TESSERA_REGION_LIVENESS_OFFSET + (uint64_t)slot);
  fl->l_len = 1;
}

/* One process. pid 0 = free slot. */
struct tessera_region_slot {
  int32_t pid;    /* PID in the process's own PID namespace (processes of a region may be in
                     several: one DRA claim shared by pods) */
  uint32_t flags; /* TESSERA_SLOT_*; 0 (older libraries): liveness by pid and start_time only */
  uint64_t start_time; /* field 22 of /proc/<pid>/stat (clock ticks after boot): tells PID reuse */
  uint64_t used_bytes[TESSERA_REGION_MAX_DEVICES]; /* this process's charge per device */
};

struct tessera_region {
  uint64_t magic;         /* TESSERA_REGION_MAGIC once initialised */
  uint32_t version;       /* TESSERA_REGION_VERSION */
  uint32_t header_size;   /* offsetof(struct tessera_region, slots) */
  uint64_t total_size;    /* sizeof(struct tessera_region) */
  uint32_t device_count;  /* TESSERA_REGION_MAX_DEVICES */
  uint32_t slot_count;    /* TESSERA_REGION_MAX_SLOTS */
  uint64_t last_sweep_ns; /* CLOCK_MONOTONIC time of the last dead-process sweep (atomic) */
  /* The kernel's boot ID when the region was last opened (0: not recorded, a library before it
   * was added). A process that finds another one starts the region over: no process of an
   * earlier boot is alive, and CLOCK_MONOTONIC times (last_sweep_ns, compute_tat_ns,
   * compute_contended_ns) and slot start times of an earlier boot mean nothing in this one. */
  uint64_t boot_id[2];
  /* Where struct tessera_region_spill lies in the file (0: nowhere, a library before issue 33;
   * else TESSERA_REGION_SPILL_OFFSET). Set once, by the first process of such a library to open
   * the region, which then sizes the file to TESSERA_REGION_FILE_SIZE. */
  uint64_t spill_offset;
  union {
    pthread_mutex_t mutex; /* robust, process-shared */
    unsigned char bytes[64];
  } lock;
  struct tessera_region_device devices[TESSERA_REGION_MAX_DEVICES];
  struct tessera_region_slot slots[TESSERA_REGION_MAX_SLOTS];
};

/* Host memory served in place of device memory (the limits file's spill.<i>, issue 33). It lies
 * past the fixed part (total_size), so that the layout and its version stay what readers of the
 * fixed part know: every figure above keeps its meaning, and devices[i].used_bytes and
 * slots[s].used_bytes[i] still count everything charged against the limit, device and host
 * memory together. The bytes below are the part of those served from host memory. Zero (a file
 * just extended) means "nothing spilled". Changed only with atomic operations; a charge adds to
 * the device's figure (compare-and-swap against spill.<i>) before the slot's, a release takes
 * from the slot before the device, and a dead process's slot is emptied into the device's figure
 * with its used_bytes, so both err high like used_bytes (docs/in-container-library.md). */
struct tessera_region_spill {
  uint64_t device_bytes[TESSERA_REGION_MAX_DEVICES]; /* of devices[i].used_bytes */
  uint64_t slot_bytes[TESSERA_REGION_MAX_SLOTS][TESSERA_REGION_MAX_DEVICES]; /* of slots[s] */
};

#define TESSERA_REGION_SPILL_OFFSET ((uint64_t)sizeof(struct tessera_region))
#define TESSERA_REGION_FILE_SIZE (TESSERA_REGION_SPILL_OFFSET + sizeof(struct tessera_region_spill))

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_ABI_SHARED_REGION_H_ */
