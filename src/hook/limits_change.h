/* Whether a limits file that replaced the one a running process started with may be applied
 * (issue 36: a running container's memory and compute limits change without a restart). The node
 * agent rewrites the file with new memory.<i>, spill.<i>, cores.<i> and ceiling.<i>; everything
 * else (version, mode, devices, uuid.<i>, region) describes the container and its shared region,
 * which a running process cannot change, so a file that changes any of it is refused, as is one
 * that does not parse. A refused file leaves the limits as they were: never "no limit".
 *
 *   struct hook_limits next;
 *   hook_limits_parse_file(text, path, &next);          (an error is kept in next.error)
 *   char why[512];
 *   switch (limits_change_decide(current, &next, why, sizeof(why))) { ... }
 *
 * Thread-safety: a pure function over caller-owned structs. */
#ifndef TESSERA_HOOK_LIMITS_CHANGE_H_
#define TESSERA_HOOK_LIMITS_CHANGE_H_

#include <stddef.h>

#include "limits.h"

enum limits_change {
  LIMITS_REFUSE = -1, /* not applied; `why` says what was wrong and what is allowed */
  LIMITS_SAME = 0,    /* nothing a process applies changed */
  LIMITS_APPLY = 1    /* memory.<i>, spill.<i>, cores.<i> or ceiling.<i> changed */
};

/* Decides what to do with `next`, read from the file that replaced the one `current` came from
 * (`current`: the limits the process applies now, from a limits file). `next->error` set (the
 * file did not parse) refuses with its message. On LIMITS_REFUSE `why` holds one sentence (no
 * trailing period) naming the source, the key and what is allowed; otherwise it is empty. */
enum limits_change limits_change_decide(const struct hook_limits* current,
                                        const struct hook_limits* next, char* why, size_t size);

#endif /* TESSERA_HOOK_LIMITS_CHANGE_H_ */
