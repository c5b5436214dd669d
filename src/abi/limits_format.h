/* The per-container limits file: written by the node agent, read by libtessera-cuda.so.
 *
 * Location: /var/run/tessera/limits inside the container (the allocation directory, mounted
 * read-only), or the path in TESSERA_LIMITS_FILE when that file is absent (tests, standalone use).
 *
 * Format: text, one `key=value` per line, '#' starts a comment line, no spaces around '='.
 *   version=2              required first key; readers reject other versions
 *   mode=hard              hard | elastic (compute limit behaviour)
 *   devices=2              required: number of devices the container sees
 *   uuid.<i>=GPU-...       UUID of the container's device <i> (its index as the container sees it);
 *                          GPU-... or MIG-... (a MIG instance)
 *   memory.<i>=4294967296  required for every <i> below devices: memory limit of device <i> in
 *                          bytes (0 = no limit)
 *   cores.<i>=30           required likewise: compute percent of device <i> (0 or 100 = no limit)
 *   ceiling.<i>=80         elastic mode: the most of device <i>'s time the container may use when
 *                          it has the device to itself, cores.<i> to 100 (absent or 100 = all of
 *                          it); needs cores.<i>; hard mode holds to cores.<i> anyway
 *   region=/var/run/tessera-region/region   optional: path of the shared region file
 *   end=<bytes>            required last line, newline included: the number of bytes before it,
 *                          so that a reader tells a whole file from a truncated or damaged one
 * Unknown keys are an error (a reader never runs unlimited because of a misspelt key). Writers
 * write the whole file under a temporary name in the same folder and rename it into place. */
#ifndef TESSERA_ABI_LIMITS_FORMAT_H_
#define TESSERA_ABI_LIMITS_FORMAT_H_

#define TESSERA_LIMITS_PATH "/var/run/tessera/limits"
#define TESSERA_LIMITS_VERSION 2
#define TESSERA_MAX_DEVICES 16

#endif /* TESSERA_ABI_LIMITS_FORMAT_H_ */
