/* Environment variables that the in-container library (libtessera-cuda.so) reads.
 *
 * Shared, as plain C, by the library and the configuration layer: the configuration layer treats
 * every other TESSERA_* variable as a key of its schema, and an unknown one as an error, so the
 * library's variables are listed here, once. */
#ifndef TESSERA_ABI_LIBRARY_ENV_H_
#define TESSERA_ABI_LIBRARY_ENV_H_

/* Tessera's own names. */
#define TESSERA_ENV_LIMITS_FILE \
  "TESSERA_LIMITS_FILE" /* limits file when /var/run/tessera/limits is absent */
#define TESSERA_ENV_PIDS_FILE \
  "TESSERA_PIDS_FILE" /* host PIDs file when /var/run/tessera/pids is absent */
#define TESSERA_ENV_CORE_MODE "TESSERA_CORE_MODE" /* hard | elastic */
#define TESSERA_ENV_LOG_LEVEL "TESSERA_LOG_LEVEL" /* also the log.level key of every command */
/* Tests only: a folder standing for / where the library reads the host's memory figures before
 * spilling (proc/self/cgroup, proc/meminfo, sys/fs/cgroup/...); ignored when the limits come from
 * /var/run/tessera/limits. */
#define TESSERA_ENV_HOST_ROOM_ROOT "TESSERA_HOST_ROOM_ROOT"

/* HAMi-compatible names (standalone use without Kubernetes). */
#define TESSERA_ENV_HAMI_MEMORY_LIMIT "CUDA_DEVICE_MEMORY_LIMIT" /* and _<i> per device */
#define TESSERA_ENV_HAMI_SM_LIMIT "CUDA_DEVICE_SM_LIMIT"         /* and _<i> per device */
#define TESSERA_ENV_HAMI_SHARED_CACHE "CUDA_DEVICE_MEMORY_SHARED_CACHE"
#define TESSERA_ENV_HAMI_LOG_LEVEL "LIBCUDA_LOG_LEVEL"

/* The TESSERA_-prefixed names above, as a NULL-terminated list. */
#define TESSERA_LIBRARY_ENV_NAMES                                                                 \
  {                                                                                               \
    TESSERA_ENV_LIMITS_FILE, TESSERA_ENV_PIDS_FILE, TESSERA_ENV_CORE_MODE, TESSERA_ENV_LOG_LEVEL, \
        TESSERA_ENV_HOST_ROOM_ROOT, 0                                                             \
  }

#endif /* TESSERA_ABI_LIBRARY_ENV_H_ */
