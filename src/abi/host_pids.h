/* The host PIDs of a container's processes: written by the node agent, read by libtessera-cuda.so
 * to find its own processes in NVML's answers, which name processes by their PID on the host.
 *
 * Location: /var/run/tessera/pids inside the container (beside the limits file, in the allocation
 * directory, read-only), or the path in TESSERA_PIDS_FILE when that is absent. Text, a line each:
 *   version=1              required first line; readers reject other versions
 *   <host pid> <pid>       one line per process: its PID on the host, then its PID in the
 *                          container's own PID namespace (the last field of NSpid in
 *                          /proc/<host pid>/status); the two are equal without a PID namespace
 * The agent rewrites the file whole (temporary name, rename) every node.pid-refresh while the
 * container runs, only when it changed. A process younger than one refresh may be missing:
 * readers treat a missing PID as unknown.
 * How the agent finds the processes: docs/node-agent.md, "The pids file". */
#ifndef TESSERA_ABI_HOST_PIDS_H_
#define TESSERA_ABI_HOST_PIDS_H_

#define TESSERA_PIDS_PATH "/var/run/tessera/pids"
#define TESSERA_PIDS_FILE_NAME "pids"
#define TESSERA_PIDS_VERSION 1

#endif /* TESSERA_ABI_HOST_PIDS_H_ */
