#include "limits_change.h"

#include <stdio.h>
#include <string.h>

#include "abi/shared_region.h"

static const char kMayChange[] =
    "a running container's limits file may change memory.<i>, spill.<i>, cores.<i> and "
    "ceiling.<i> only";

static const char* mode_name(int mode) {
  return mode == HOOK_CORE_ELASTIC ? "elastic" : "hard";
}

/* The region a file names: region= or, absent, the default the reader uses. */
static const char* region_of(const struct hook_limits* l) {
  return l->region_path[0] != '\0' ? l->region_path : TESSERA_REGION_DEFAULT_PATH;
}

static const char* uuid_of(const struct hook_limits* l, int i) {
  return l->has_uuid[i] ? l->uuid[i] : "(none)";
}

/* Writes the refusal of key `key`: the file's value against the one the process started with. */
static enum limits_change refuse(char* why, size_t size, const struct hook_limits* next,
                                 const char* key, const char* now, const char* was) {
  snprintf(why, size, "%s: %s=%s, but the process started with %s=%s (%s)", next->source, key, now,
           key, was, kMayChange);
  return LIMITS_REFUSE;
}

enum limits_change limits_change_decide(const struct hook_limits* current,
                                        const struct hook_limits* next, char* why, size_t size) {
  why[0] = '\0';
  if (next->error) {
    snprintf(why, size, "%s", next->message);
    return LIMITS_REFUSE;
  }
  if (next->mode != current->mode) {
    return refuse(why, size, next, "mode", mode_name(next->mode), mode_name(current->mode));
  }
  if (next->device_count != current->device_count) {
    char now[16], was[16];
    snprintf(now, sizeof(now), "%d", next->device_count);
    snprintf(was, sizeof(was), "%d", current->device_count);
    return refuse(why, size, next, "devices", now, was);
  }
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (next->has_uuid[i] == current->has_uuid[i] &&
        (!next->has_uuid[i] || strcmp(next->uuid[i], current->uuid[i]) == 0)) {
      continue;
    }
    char key[16];
    snprintf(key, sizeof(key), "uuid.%d", i);
    return refuse(why, size, next, key, uuid_of(next, i), uuid_of(current, i));
  }
  if (strcmp(region_of(next), region_of(current)) != 0) {
    return refuse(why, size, next, "region", region_of(next), region_of(current));
  }
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (next->memory[i] != current->memory[i] || next->spill[i] != current->spill[i] ||
        next->cores[i] != current->cores[i] || next->ceiling[i] != current->ceiling[i]) {
      return LIMITS_APPLY;
    }
  }
  return LIMITS_SAME;
}
