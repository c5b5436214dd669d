/* This process's PID as the host, and so NVML, sees it: looked up in the node agent's pids file
 * (src/abi/host_pids.h). NVML names processes by host PID; inside a container's PID namespace
 * getpid() is another number.
 *
 * Thread-safety: thread-safe. */
#ifndef TESSERA_HOOK_HOST_PID_H_
#define TESSERA_HOOK_HOST_PID_H_

#include <sys/types.h>

/* The host PID of the process whose PID in its own namespace is `pid`, from the text of a pids
 * file; 0 when the file does not list it, -1 when the text is not a version 1 pids file. */
pid_t host_pid_parse(const char* text, pid_t pid);

/* The calling process's host PID from the pids file, 0 when unknown (no file, or the process is
 * younger than the agent's last refresh). A PID once found is kept for the process's life. */
pid_t hook_host_pid(void);

#endif /* TESSERA_HOOK_HOST_PID_H_ */
