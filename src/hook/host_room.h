/* Whether the host has room for more pinned memory, asked before an allocation is served from host
 * memory (spilled): the container's memory cgroup and the node must both keep a margin after it,
 * so that the kernel never OOM-kills a process (this one, or another pod's) for memory the library
 * chose to pin. Pinned pages are charged to the cgroup of the process that pins them and cannot be
 * reclaimed or swapped.
 *
 * - The cgroup: limit less usage, for the process's cgroup and each ancestor visible under the
 *   cgroup mount (the container's limit, then the pod's), the smallest of them. cgroup v2:
 *   memory.max - memory.current; v1: memory.limit_in_bytes - memory.usage_in_bytes of the memory
 *   controller. The path comes from /proc/self/cgroup; where the mount shows the container's own
 *   cgroup at its root (a cgroup namespace, or v1 bind mounts), the root's files are read. No
 *   limit anywhere (or no cgroup files): only the node counts.
 * - The node: MemAvailable of /proc/meminfo (what can be allocated without swapping).
 *
 * Usage counts the page cache, which the kernel could reclaim: the check errs on the side of
 * refusing. Everything is read with open/read at each check (a spill is rare and costs a
 * cuMemHostAlloc, far more than these reads).
 *
 * Thread-safety: the functions are thread-safe (no state). */
#ifndef TESSERA_HOOK_HOST_ROOM_H_
#define TESSERA_HOOK_HOST_ROOM_H_

#include <stddef.h>
#include <stdint.h>

/* What must be left after a spill: in the container's cgroup, and on the node. */
#define HOST_ROOM_CGROUP_MARGIN (256ull << 20)
#define HOST_ROOM_NODE_MARGIN (1ull << 30)

struct host_room {
  int cgroup_limited;      /* some cgroup level has a memory limit */
  uint64_t cgroup_free;    /* the smallest limit - usage of those levels (when limited) */
  int node_known;          /* /proc/meminfo had MemAvailable */
  uint64_t node_available; /* MemAvailable in bytes (when known) */
};

/* Reads the figures above. `root` is prepended to every path ("" outside tests: /proc/self/cgroup,
 * /proc/meminfo, /sys/fs/cgroup/...). Never fails: what cannot be read is left out (unlimited,
 * unknown). */
void host_room_read(const char* root, struct host_room* out);

/* Whether `bytes` more may be pinned: 0 when both margins hold after them (a cgroup without a
 * limit has no margin to keep), -1 when one does not or the node's figure is unknown, with `why`
 * saying which of the two was short and by how much. */
int host_room_check(const struct host_room* room, uint64_t bytes, char* why, size_t why_size);

#endif /* TESSERA_HOOK_HOST_ROOM_H_ */
