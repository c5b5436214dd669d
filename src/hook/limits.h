/* The limits of this container, read at a process's first CUDA call: from the read-only limits file
 * (/var/run/tessera/limits, format in abi/limits_format.h) when it exists, then the environment
 * cannot change them; else from the file named by TESSERA_LIMITS_FILE; else from the
 * HAMi-compatible environment (CUDA_DEVICE_MEMORY_LIMIT[_<i>], CUDA_DEVICE_SM_LIMIT[_<i>],
 * TESSERA_CORE_MODE, CUDA_DEVICE_MEMORY_SHARED_CACHE).
 *
 * A malformed value never means "no limit": hook_limits.error is set with a message that names the
 * source, the value and what is allowed, and the library then fails every CUDA call.
 *
 * A running process follows later versions of the file (limits_watch.h); the environment is read
 * once.
 *
 * Thread-safety: plain functions over caller-owned structs; hook_limits_load uses one static
 * buffer for the file's text (its one caller runs once per process). */
#ifndef TESSERA_HOOK_LIMITS_H_
#define TESSERA_HOOK_LIMITS_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/limits_format.h"
#include "file_id.h"

enum hook_core_mode { HOOK_CORE_HARD = 0, HOOK_CORE_ELASTIC = 1 };

struct hook_limits {
  int active; /* some limit is configured: the library accounts and enforces */
  int error;  /* malformed configuration: every CUDA call fails */
  char message[512];
  char source[300]; /* where the limits came from, for log lines */
  int from_file;
  int from_fixed_path;       /* read from the read-only file: the environment changes nothing */
  char path[300];            /* the file's path when from_file */
  struct os_file_id file_id; /* which version of it was read (0s: none could be) */
  uint64_t memory[TESSERA_MAX_DEVICES]; /* bytes; 0 = no limit */
  /* The most of memory[i] that may be served from host memory when the device is full (spill.<i>
   * of the file; bytes, at most memory[i]); 0 = none, the allocation fails at the device. */
  uint64_t spill[TESSERA_MAX_DEVICES];
  int cores[TESSERA_MAX_DEVICES];   /* percent; 0 = no limit */
  int ceiling[TESSERA_MAX_DEVICES]; /* elastic: percent it may use alone; 0 = whole device */
  int mode;                         /* enum hook_core_mode */
  int device_count;                 /* devices= of the file; 0 when not given */
  int has_uuid[TESSERA_MAX_DEVICES];
  char uuid[TESSERA_MAX_DEVICES][96]; /* uuid.<i> of the file ("GPU-...") */
  char region_path[512];
};

/* Parses a size: plain bytes, or a number with k/m/g/t or Ki/Mi/Gi/Ti (powers of 1024, any case,
 * optional trailing B). Returns 0 on success, else -1 and a reason in *why. */
int hook_parse_size(const char* text, uint64_t* out, const char** why);

/* Parses the text of a limits file into *out (which it resets first). `name` is used in messages.
 * Returns 0, or -1 with out->error and out->message set. */
int hook_limits_parse_file(const char* text, const char* name, struct hook_limits* out);

/* Reads and parses the limits file at `path` into *out (as hook_limits_load does: path, file_id
 * and the default region filled in), using `buffer` of `size` bytes for its text. Returns 0, or -1
 * with out->error and out->message set. Thread-safe when callers' buffers differ. */
int hook_limits_read_file(const char* path, char* buffer, size_t size, struct hook_limits* out);

/* Reads the limits from the sources above, `fixed_path` being the read-only file's path
 * (TESSERA_LIMITS_PATH outside tests). Never fails: errors land in out->error / out->message. */
void hook_limits_load(const char* fixed_path, struct hook_limits* out);

#endif /* TESSERA_HOOK_LIMITS_H_ */
