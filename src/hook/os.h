/* OS specifics of libtessera-cuda.so, in one place: glibc symbol-version pins, clocks, process
 * liveness and tiny self-contained helpers that are safe before main() and inside any process.
 *
 * Every source file of the library includes this header first. The .symver pins bind the dl* and
 * pthread_* calls to their GLIBC_2.2.5 / 2.12 versions (x86-64) or GLIBC_2.17 (aarch64), so the
 * library loads on glibc 2.17 where these live in libdl.so.2 / libpthread.so.0 (both listed as
 * NEEDED at link time).
 *
 * Thread-safety: all functions are thread-safe and async-signal-unsafe. */
#ifndef TESSERA_HOOK_OS_H_
#define TESSERA_HOOK_OS_H_

#define _GNU_SOURCE 1
#include <stddef.h>
#include <stdint.h>

#include "file_id.h"

#if defined(__x86_64__)
#define TESSERA_GLIBC_BASE "GLIBC_2.2.5"
__asm__(".symver dlvsym,dlvsym@GLIBC_2.2.5");
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver dladdr1,dladdr1@GLIBC_2.3.3");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_consistent,pthread_mutex_consistent@GLIBC_2.12");
__asm__(".symver pthread_mutexattr_setrobust,pthread_mutexattr_setrobust@GLIBC_2.12");
__asm__(".symver pthread_mutexattr_setpshared,pthread_mutexattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_init,pthread_mutexattr_init@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_destroy,pthread_mutexattr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_init,pthread_mutex_init@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_lock,pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_unlock,pthread_mutex_unlock@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_trylock,pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_timedlock,pthread_mutex_timedlock@GLIBC_2.2.5");
__asm__(".symver pthread_detach,pthread_detach@GLIBC_2.2.5");
__asm__(".symver pthread_attr_init,pthread_attr_init@GLIBC_2.2.5");
__asm__(".symver pthread_attr_destroy,pthread_attr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setstacksize,pthread_attr_setstacksize@GLIBC_2.2.5");
#elif defined(__aarch64__)
#define TESSERA_GLIBC_BASE "GLIBC_2.17"
/* aarch64 starts at glibc 2.17: every symbol has that version there, and glibc 2.34+ adds new
 * default versions of the dl* and pthread_* calls that 2.17 lacks. */
__asm__(".symver dlvsym,dlvsym@GLIBC_2.17");
__asm__(".symver dlopen,dlopen@GLIBC_2.17");
__asm__(".symver dlclose,dlclose@GLIBC_2.17");
__asm__(".symver dladdr,dladdr@GLIBC_2.17");
__asm__(".symver dladdr1,dladdr1@GLIBC_2.17");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.17");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.17");
__asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.17");
__asm__(".symver pthread_mutex_consistent,pthread_mutex_consistent@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_setrobust,pthread_mutexattr_setrobust@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_setpshared,pthread_mutexattr_setpshared@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_init,pthread_mutexattr_init@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_destroy,pthread_mutexattr_destroy@GLIBC_2.17");
__asm__(".symver pthread_mutex_init,pthread_mutex_init@GLIBC_2.17");
__asm__(".symver pthread_mutex_lock,pthread_mutex_lock@GLIBC_2.17");
__asm__(".symver pthread_mutex_unlock,pthread_mutex_unlock@GLIBC_2.17");
__asm__(".symver pthread_mutex_trylock,pthread_mutex_trylock@GLIBC_2.17");
__asm__(".symver pthread_mutex_timedlock,pthread_mutex_timedlock@GLIBC_2.17");
__asm__(".symver pthread_detach,pthread_detach@GLIBC_2.17");
__asm__(".symver pthread_attr_init,pthread_attr_init@GLIBC_2.17");
__asm__(".symver pthread_attr_destroy,pthread_attr_destroy@GLIBC_2.17");
__asm__(".symver pthread_attr_setstacksize,pthread_attr_setstacksize@GLIBC_2.17");
#else
#error "libtessera-cuda.so supports x86-64 and aarch64"
#endif

/* Thread-local re-entrancy flag: set while a hook runs, so that calls the driver makes into its
 * own exported functions (which resolve to ours) pass straight through. */
extern __thread int tessera_in_hook __attribute__((tls_model("initial-exec")));

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t os_now_ns(void);

/* CLOCK_REALTIME in microseconds (NVML stamps its samples with it). */
uint64_t os_realtime_us(void);

/* Sleeps for `ns` nanoseconds (restarts after signals). */
void os_sleep_ns(uint64_t ns);

/* The process's identity for the shared region: start time (field 22 of /proc/<pid>/stat).
 * Returns 0 and sets *start_time, *zombie when the process exists; -1 only when it certainly does
 * not. When /proc/<pid>/stat cannot be read or parsed but kill(pid, 0) says the process exists,
 * *start_time is 0 (unknown). */
int os_process_info(int pid, uint64_t* start_time, int* zombie);

/* The kernel's boot ID (/proc/sys/kernel/random/boot_id, a UUID new at every boot) as two
 * integers. Returns 0, or -1 when it cannot be read or parsed. */
int os_boot_id(uint64_t id[2]);

/* The type bits (S_IFMT of <sys/stat.h>) of the file at `path`, following links; -1 with errno. */
int os_file_type(const char* path, unsigned int* type);

/* Reads a whole small regular file into `buffer` (NUL-terminated); -1 with errno on failure
 * (EFBIG when it does not fit, EINVAL when it is not a regular file: a FIFO is never waited on). */
int os_read_small_file(const char* path, char* buffer, size_t size);

/* The identity of the file at `path`, following links; -1 with errno. */
int os_file_id(const char* path, struct os_file_id* id);

/* os_read_small_file, and in *id the identity of the very file read (from its descriptor, so that
 * a replacement renamed into place between the two cannot be mistaken for it). */
int os_read_small_file_id(const char* path, char* buffer, size_t size, struct os_file_id* id);

/* Writes the whole buffer to stderr, ignoring errors. */
void os_write_stderr(const char* text, size_t len);

#endif /* TESSERA_HOOK_OS_H_ */
