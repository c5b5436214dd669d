/* The per-container limits file: written by the node agent, read by libtessera-cuda.so, at
 * /var/run/tessera/limits in the container (the allocation folder, mounted read-only), or the
 * path in TESSERA_LIMITS_FILE when that file is absent (tests, standalone use).
 * Text, one `key=value` per line, '#' starts a comment line, no spaces around '=':
 *   version=2                required first key; readers reject other versions
 *   mode=hard|elastic        compute limit behaviour
 *   devices=<n>              required: devices the container sees (<i> below is 0..n-1)
 *   uuid.<i>=GPU-...|MIG-... UUID of the container's device <i> (its index in the container)
 *   memory.<i>=<bytes>       required for every <i>: memory limit in bytes (0 = no limit)
 *   spill.<i>=<bytes>        optional: the most of memory.<i> served from host memory when the
 *                            device is full (0 or absent = none; needs memory.<i>, at most it)
 *   cores.<i>=<percent>      required likewise: compute percent (0 or 100 = no limit)
 *   ceiling.<i>=<percent>    elastic: the most of the device's time when alone (cores.<i>..100)
 *   region=<path>            optional: path of the shared region file
 *   end=<bytes>              required last line, newline included: the bytes before it
 * Unknown keys are an error. Writers write the whole file under a temporary name in the same
 * folder and rename it into place. Every rule, and why: docs/in-container-library.md,
 * "The limits file (version 2)".
 * Resizing a running container (issue 36): the writer replaces the file that way with new
 * memory.<i>, spill.<i>, cores.<i> and ceiling.<i>, keeping version, mode, devices, uuid.<i> and
 * region; every process of the container applies it within a second, and refuses (keeping the
 * limits in force, with one error line) a version that changes anything else or does not parse:
 * docs/in-container-library.md, "Changing the limits of a running container". */
#ifndef TESSERA_ABI_LIMITS_FORMAT_H_
#define TESSERA_ABI_LIMITS_FORMAT_H_

#define TESSERA_LIMITS_PATH "/var/run/tessera/limits"
#define TESSERA_LIMITS_VERSION 2
#define TESSERA_MAX_DEVICES 16

#endif /* TESSERA_ABI_LIMITS_FORMAT_H_ */
