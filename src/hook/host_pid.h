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

/* The PID in the container's own namespace of the process whose host PID is `host`, from the text
 * of a pids file; 0 when the file does not list it, -1 when the text is not a version 1 pids
 * file. */
pid_t host_pid_own_parse(const char* text, pid_t host);

/* The pids file's text in a malloc'ed buffer the caller frees; NULL when there is no pids file
 * (no PID namespace to translate to), or it cannot be read or is not version 1 (logged). */
char* hook_pids_text(void);

/* The calling process's host PID from the pids file, 0 when unknown (no file, or the process is
 * younger than the agent's last refresh). A PID once found is kept for the process's life. */
pid_t hook_host_pid(void);

/* The host PIDs of the `n` processes whose PIDs in this namespace are `pids`, into `hosts`.
 * Returns 1 when the pids file lists them all, 0 when there is no pids file (then `hosts` = `pids`:
 * most likely no PID namespace), -1 when a pids file exists and does not list them all (a process
 * younger than the agent's last refresh) or cannot be read. */
int hook_host_pids(const pid_t* pids, int n, pid_t* hosts);

#endif /* TESSERA_HOOK_HOST_PID_H_ */
