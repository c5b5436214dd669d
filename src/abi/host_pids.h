/* The host PIDs of a container's processes: written by the node agent, read by libtessera-cuda.so.
 *
 * NVML (nvidia-smi, per-process memory and utilisation) names processes by their PID on the host,
 * which a process in a container's PID namespace cannot know. The agent finds the container's
 * processes through its cgroup (v1 or v2, cgroupfs or systemd driver) and writes the pairs here.
 *
 * Location: /var/run/tessera/pids inside the container (beside the limits file, in the allocation
 * directory, mounted read-only), or the path in TESSERA_PIDS_FILE when that file is absent.
 *
 * Format: text, one entry per line.
 *   version=1              required first line; readers reject other versions
 *   <host pid> <pid>       one line per process: its PID on the host, then its PID in the
 *                          container's own PID namespace (the last field of NSpid in
 *                          /proc/<host pid>/status); the two are equal without a PID namespace
 * The agent refreshes the file every node.pid-refresh while the container runs, writing it whole
 * under a temporary name in the same folder and renaming it into place, and only when it changed.
 * A process younger than one refresh may be missing: readers treat a missing PID as unknown. */
#ifndef TESSERA_ABI_HOST_PIDS_H_
#define TESSERA_ABI_HOST_PIDS_H_

#define TESSERA_PIDS_PATH "/var/run/tessera/pids"
#define TESSERA_PIDS_FILE_NAME "pids"
#define TESSERA_PIDS_VERSION 1

#endif /* TESSERA_ABI_HOST_PIDS_H_ */
