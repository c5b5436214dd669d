#include "os.h"

#include "limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/library_env.h"
#include "abi/shared_region.h"

extern char** environ;

static const char kSizeAllowed[] =
    "allowed: bytes, or a number followed by k, m, g, t or Ki, Mi, Gi, Ti (powers of 1024); "
    "0 = no limit";

int hook_parse_size(const char* text, uint64_t* out, const char** why) {
  const char* p = text;
  if (*p < '0' || *p > '9') {
    *why = *p == '\0' ? "empty value" : "not a number";
    return -1;
  }
  uint64_t value = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    uint64_t digit = (uint64_t)(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      *why = "too large";
      return -1;
    }
    value = value * 10 + digit;
  }
  int shift = 0;
  if (*p != '\0') {
    switch (*p) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        *why = "unknown size suffix";
        return -1;
    }
    ++p;
    if (*p == 'i' || *p == 'I') ++p;
    if (*p == 'b' || *p == 'B') ++p;
    if (*p != '\0') {
      *why = "unknown size suffix";
      return -1;
    }
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    *why = "too large";
    return -1;
  }
  *out = value << shift;
  return 0;
}

/* Parses a whole decimal number in [min, max]. */
static int parse_int(const char* text, int min, int max, int* out) {
  if (*text == '\0') return -1;
  long value = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return -1;
    value = value * 10 + (*p - '0');
    if (value > max) return -1;
  }
  if (value < min) return -1;
  *out = (int)value;
  return 0;
}

static int fail(struct hook_limits* out, const char* format, const char* a, const char* b,
                const char* c) {
  out->error = 1;
  snprintf(out->message, sizeof(out->message), format, a, b, c);
  return -1;
}

static void reset(struct hook_limits* out) {
  memset(out, 0, sizeof(*out));
  out->mode = HOOK_CORE_HARD;
}

static int parse_mode(const char* text, int* mode) {
  if (strcmp(text, "hard") == 0) {
    *mode = HOOK_CORE_HARD;
  } else if (strcmp(text, "elastic") == 0) {
    *mode = HOOK_CORE_ELASTIC;
  } else {
    return -1;
  }
  return 0;
}

/* "memory.3" with prefix "memory." -> 3; -1 when the suffix is not a device index. */
static int key_index(const char* key, const char* prefix) {
  size_t n = strlen(prefix);
  if (strncmp(key, prefix, n) != 0) return -2;
  int index;
  if (parse_int(key + n, 0, TESSERA_MAX_DEVICES - 1, &index) != 0) return -1;
  return index;
}

int hook_limits_parse_file(const char* text, const char* name, struct hook_limits* out) {
  reset(out);
  out->from_file = 1;
  out->active = 1;
  snprintf(out->source, sizeof(out->source), "limits file %s", name);
  int seen_version = 0, seen_mode = 0, seen_devices = 0, seen_region = 0;
  int seen_memory[TESSERA_MAX_DEVICES] = {0}, seen_cores[TESSERA_MAX_DEVICES] = {0};
  int seen_ceiling[TESSERA_MAX_DEVICES] = {0}, seen_spill[TESSERA_MAX_DEVICES] = {0};
  int seen_end = 0;
  char line[1024];
  int line_number = 0;
  const char* p = text;
  while (*p) {
    const size_t offset = (size_t)(p - text);
    const char* end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    ++line_number;
    char where[64];
    snprintf(where, sizeof(where), "%d", line_number);
    if (seen_end) return fail(out, "%s line %s: text after the end= line%s", name, where, "");
    if (len >= sizeof(line)) return fail(out, "%s line %s: line too long%s", name, where, "");
    memcpy(line, p, len);
    line[len] = '\0';
    if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
    p = end ? end + 1 : p + len;
    if (len == 0 || line[0] == '#') continue;
    char* eq = strchr(line, '=');
    if (eq == NULL) {
      return fail(out, "%s line %s: expected key=value, got \"%s\"", name, where, line);
    }
    *eq = '\0';
    const char* key = line;
    const char* value = eq + 1;
    if (!seen_version && strcmp(key, "version") != 0) {
      return fail(out, "%s line %s: the first key must be version=2, got \"%s\"", name, where, key);
    }
    int index;
    const char* why;
    if (strcmp(key, "version") == 0) {
      if (seen_version) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      int version;
      if (parse_int(value, 1, 1000000, &version) != 0 || version != TESSERA_LIMITS_VERSION) {
        return fail(out, "%s line %s: unsupported version \"%s\" (this library reads version 2)",
                    name, where, value);
      }
      seen_version = 1;
    } else if (strcmp(key, "end") == 0) {
      /* The byte count of everything before this line, and the line ends the file with its
       * newline: a file cut anywhere, or pieced together, fails one of the two. */
      char expected[32];
      snprintf(expected, sizeof(expected), "%zu", offset);
      if (strcmp(value, expected) != 0 || end == NULL) {
        out->error = 1;
        snprintf(out->message, sizeof(out->message),
                 "%s line %d: end=\"%s\" does not match the file (expected end=%s and a "
                 "newline): the file is truncated or damaged",
                 name, line_number, value, expected);
        return -1;
      }
      seen_end = 1;
    } else if (strcmp(key, "mode") == 0) {
      if (seen_mode) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (parse_mode(value, &out->mode) != 0) {
        return fail(out, "%s line %s: mode=\"%s\" (allowed: hard, elastic)", name, where, value);
      }
      seen_mode = 1;
    } else if (strcmp(key, "devices") == 0) {
      if (seen_devices) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (parse_int(value, 0, TESSERA_MAX_DEVICES, &out->device_count) != 0) {
        return fail(out, "%s line %s: devices=\"%s\" (allowed: 0 to 16)", name, where, value);
      }
      seen_devices = 1;
    } else if (strcmp(key, "region") == 0) {
      if (seen_region) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (value[0] != '/' || strlen(value) >= sizeof(out->region_path)) {
        return fail(out, "%s line %s: region=\"%s\" (allowed: an absolute path)", name, where,
                    value);
      }
      snprintf(out->region_path, sizeof(out->region_path), "%s", value);
      seen_region = 1;
    } else if ((index = key_index(key, "memory.")) != -2) {
      if (index < 0) {
        return fail(out, "%s line %s: \"%s\" is not memory.<device index 0-15>", name, where, key);
      }
      if (seen_memory[index])
        return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (hook_parse_size(value, &out->memory[index], &why) != 0) {
        out->error = 1;
        snprintf(out->message, sizeof(out->message), "%s line %d: %s=\"%s\": %s (%s)", name,
                 line_number, key, value, why, kSizeAllowed);
        return -1;
      }
      seen_memory[index] = 1;
    } else if ((index = key_index(key, "spill.")) != -2) {
      if (index < 0) {
        return fail(out, "%s line %s: \"%s\" is not spill.<device index 0-15>", name, where, key);
      }
      if (seen_spill[index]) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (hook_parse_size(value, &out->spill[index], &why) != 0) {
        out->error = 1;
        snprintf(out->message, sizeof(out->message),
                 "%s line %d: %s=\"%s\": %s (allowed: bytes, or a number followed by k, m, g, t "
                 "or Ki, Mi, Gi, Ti (powers of 1024), at most memory.%d; 0 = no spilling)",
                 name, line_number, key, value, why, index);
        return -1;
      }
      seen_spill[index] = 1;
    } else if ((index = key_index(key, "cores.")) != -2) {
      if (index < 0) {
        return fail(out, "%s line %s: \"%s\" is not cores.<device index 0-15>", name, where, key);
      }
      if (seen_cores[index]) return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (parse_int(value, 0, 100, &out->cores[index]) != 0) {
        return fail(out,
                    "%s line %s: cores=\"%s\" (allowed: a percent 0 to 100; 0 or 100 = no limit)",
                    name, where, value);
      }
      if (out->cores[index] == 100) out->cores[index] = 0;
      seen_cores[index] = 1;
    } else if ((index = key_index(key, "ceiling.")) != -2) {
      if (index < 0) {
        return fail(out, "%s line %s: \"%s\" is not ceiling.<device index 0-15>", name, where, key);
      }
      if (seen_ceiling[index])
        return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (parse_int(value, 1, 100, &out->ceiling[index]) != 0) {
        return fail(out,
                    "%s line %s: ceiling=\"%s\" (allowed: a percent 1 to 100; 100 = the whole "
                    "device)",
                    name, where, value);
      }
      if (out->ceiling[index] == 100) out->ceiling[index] = 0;
      seen_ceiling[index] = 1;
    } else if ((index = key_index(key, "uuid.")) != -2) {
      if (index < 0) {
        return fail(out, "%s line %s: \"%s\" is not uuid.<device index 0-15>", name, where, key);
      }
      if (out->has_uuid[index])
        return fail(out, "%s line %s: duplicate key \"%s\"", name, where, key);
      if (strncmp(value, "GPU-", 4) != 0 && strncmp(value, "MIG-", 4) != 0) {
        return fail(out, "%s line %s: uuid=\"%s\" (allowed: GPU-... or MIG-...)", name, where,
                    value);
      }
      if (strlen(value) >= sizeof(out->uuid[0])) {
        return fail(out, "%s line %s: uuid too long%s", name, where, "");
      }
      snprintf(out->uuid[index], sizeof(out->uuid[0]), "%s", value);
      out->has_uuid[index] = 1;
    } else {
      return fail(out,
                  "%s line %s: unknown key \"%s\" (allowed: version, mode, devices, uuid.<i>, "
                  "memory.<i>, spill.<i>, cores.<i>, ceiling.<i>, region)",
                  name, where, key);
    }
  }
  if (!seen_version)
    return fail(out, "%s: empty limits file (version=2 is required)%s%s", name, "", "");
  if (!seen_end) {
    return fail(out,
                "%s: no end=<bytes> line at the end: the file is truncated or incomplete (a "
                "limits file ends with end=<its size before that line>)%s%s",
                name, "", "");
  }
  if (!seen_devices) return fail(out, "%s: devices=<count> is missing%s%s", name, "", "");
  for (int i = 0; i < out->device_count; ++i) {
    if (seen_memory[i] && seen_cores[i]) continue;
    char index_text[16];
    snprintf(index_text, sizeof(index_text), "%d", i);
    return fail(out,
                "%s: %s.%s is missing (every device below devices= needs memory.<i> and "
                "cores.<i>; 0 = no limit, written out)",
                name, seen_memory[i] ? "cores" : "memory", index_text);
  }
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (out->ceiling[i] == 0) continue;
    char index_text[16];
    snprintf(index_text, sizeof(index_text), "%d", i);
    if (out->cores[i] == 0) {
      return fail(out, "%s: ceiling.%s is set but cores.%s is not (a ceiling bounds a limit)", name,
                  index_text, index_text);
    }
    if (out->ceiling[i] < out->cores[i]) {
      return fail(out, "%s: ceiling.%s is below cores.%s (allowed: cores to 100)", name, index_text,
                  index_text);
    }
  }
  if (seen_devices) {
    for (int i = out->device_count; i < TESSERA_MAX_DEVICES; ++i) {
      if (seen_memory[i] || seen_cores[i] || seen_ceiling[i] || seen_spill[i] || out->has_uuid[i]) {
        char what[96];
        if (out->device_count == 0) {
          snprintf(what, sizeof(what), "%d is given but devices=0 (no device is visible)", i);
        } else {
          snprintf(what, sizeof(what), "%d is beyond devices=%d (allowed indexes: 0 to %d)", i,
                   out->device_count, out->device_count - 1);
        }
        return fail(out, "%s: device %s%s", name, what, "");
      }
    }
  }
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (out->spill[i] == 0) continue;
    char index_text[16];
    snprintf(index_text, sizeof(index_text), "%d", i);
    /* Spilling serves part of a limit from host memory: without a limit there is nothing to
     * serve, and more than the limit could never be used. */
    if (out->memory[i] == 0) {
      return fail(out, "%s: spill.%s is set but memory.%s is 0 (spilling serves part of a limit)",
                  name, index_text, index_text);
    }
    if (out->spill[i] > out->memory[i]) {
      return fail(out, "%s: spill.%s is above memory.%s (allowed: 0 up to the memory limit)", name,
                  index_text, index_text);
    }
  }
  return 0;
}

static void load_error(struct hook_limits* out, const char* path, const char* what) {
  reset(out);
  out->error = 1;
  snprintf(out->message, sizeof(out->message), "cannot read limits file %s: %s", path, what);
  snprintf(out->source, sizeof(out->source), "limits file %s", path);
}

static const char* type_name(unsigned int type) {
  switch (type) {
    case S_IFIFO:
      return "a FIFO";
    case S_IFDIR:
      return "a directory";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
    case S_IFBLK:
      return "a device";
  }
  return "not a plain file";
}

int hook_limits_read_file(const char* path, char* buffer, size_t size, struct hook_limits* out) {
  unsigned int type = 0;
  struct os_file_id id = {0};
  if (os_file_type(path, &type) != 0) {
    load_error(out, path, strerror(errno));
  } else if (type != S_IFREG) {
    char what[64];
    snprintf(what, sizeof(what), "not a regular file (%s)", type_name(type));
    load_error(out, path, what);
  } else if (os_read_small_file_id(path, buffer, size, &id) != 0) {
    load_error(out, path, errno == EFBIG ? "larger than 64 KiB" : strerror(errno));
  } else if (hook_limits_parse_file(buffer, path, out) == 0 && out->region_path[0] == '\0') {
    snprintf(out->region_path, sizeof(out->region_path), "%s", TESSERA_REGION_DEFAULT_PATH);
  }
  snprintf(out->path, sizeof(out->path), "%s", path);
  out->file_id = id;
  return out->error ? -1 : 0;
}

static void load_file(const char* path, struct hook_limits* out) {
  static char text[65536];
  hook_limits_read_file(path, text, sizeof(text), out);
}

/* Applies one CUDA_DEVICE_*_LIMIT[_<i>] variable. `index` is -1 for the all-devices form. */
static int apply_env(struct hook_limits* out, const char* name, const char* value, int memory,
                     int index) {
  int first = index < 0 ? 0 : index;
  int last = index < 0 ? TESSERA_MAX_DEVICES - 1 : index;
  if (memory) {
    uint64_t bytes;
    const char* why;
    if (hook_parse_size(value, &bytes, &why) != 0) {
      out->error = 1;
      snprintf(out->message, sizeof(out->message), "%s=\"%s\": %s (%s)", name, value, why,
               kSizeAllowed);
      return -1;
    }
    for (int i = first; i <= last; ++i) out->memory[i] = bytes;
    if (bytes) out->active = 1;
  } else {
    int percent;
    if (parse_int(value, 0, 100, &percent) != 0) {
      out->error = 1;
      snprintf(out->message, sizeof(out->message),
               "%s=\"%s\": not a percent (allowed: 0 to 100; 0 or 100 = no limit)", name, value);
      return -1;
    }
    if (percent == 100) percent = 0;
    for (int i = first; i <= last; ++i) out->cores[i] = percent;
    if (percent) out->active = 1;
  }
  return 0;
}

static void load_env(struct hook_limits* out) {
  reset(out);
  snprintf(out->source, sizeof(out->source), "environment");
  const char* kinds[2] = {TESSERA_ENV_HAMI_MEMORY_LIMIT, TESSERA_ENV_HAMI_SM_LIMIT};
  for (int k = 0; k < 2; ++k) {
    /* The all-devices form first, so that _<i> overrides it whatever the order of environ. */
    const char* all = getenv(kinds[k]);
    if (all != NULL && apply_env(out, kinds[k], all, k == 0, -1) != 0) return;
    size_t prefix = strlen(kinds[k]);
    for (char** env = environ; env && *env; ++env) {
      const char* entry = *env;
      if (strncmp(entry, kinds[k], prefix) != 0 || entry[prefix] != '_') continue;
      const char* eq = strchr(entry, '=');
      if (eq == NULL) continue;
      char name[128];
      size_t name_len = (size_t)(eq - entry);
      if (name_len >= sizeof(name)) name_len = sizeof(name) - 1;
      memcpy(name, entry, name_len);
      name[name_len] = '\0';
      int index;
      if (parse_int(name + prefix + 1, 0, TESSERA_MAX_DEVICES - 1, &index) != 0) {
        out->error = 1;
        snprintf(out->message, sizeof(out->message),
                 "%s: the suffix is not a device index (allowed: %s_<0-15>)", name, kinds[k]);
        return;
      }
      if (apply_env(out, name, eq + 1, k == 0, index) != 0) return;
    }
  }
  const char* mode = getenv(TESSERA_ENV_CORE_MODE);
  if (mode != NULL && parse_mode(mode, &out->mode) != 0) {
    out->error = 1;
    snprintf(out->message, sizeof(out->message), "%s=\"%s\" (allowed: hard, elastic)",
             TESSERA_ENV_CORE_MODE, mode);
    return;
  }
  const char* region = getenv(TESSERA_ENV_HAMI_SHARED_CACHE);
  if (region != NULL && region[0] != '\0') {
    if (strlen(region) >= sizeof(out->region_path)) {
      out->error = 1;
      snprintf(out->message, sizeof(out->message), "%s: path too long",
               TESSERA_ENV_HAMI_SHARED_CACHE);
      return;
    }
    snprintf(out->region_path, sizeof(out->region_path), "%s", region);
  } else {
    snprintf(out->region_path, sizeof(out->region_path), "%s", TESSERA_REGION_DEFAULT_PATH);
  }
}

/* Whether this process runs in a container that Tessera set up: the folder of the limits file
 * (the allocation folder) is mounted. Its limits must then come from the file. */
static int set_up_by_tessera(const char* fixed_path) {
  char folder[512];
  snprintf(folder, sizeof(folder), "%s", fixed_path);
  char* slash = strrchr(folder, '/');
  if (slash != NULL && slash != folder) *slash = '\0';
  unsigned int type = 0;
  return os_file_type(folder, &type) == 0 && type == S_IFDIR;
}

void hook_limits_load(const char* fixed_path, struct hook_limits* out) {
  unsigned int type = 0;
  if (os_file_type(fixed_path, &type) == 0 || errno != ENOENT) {
    load_file(fixed_path, out); /* unreadable or of the wrong type: an error there */
    out->from_fixed_path = 1;
    return;
  }
  const char* named = getenv(TESSERA_ENV_LIMITS_FILE);
  if (named != NULL) {
    if (named[0] == '\0') {
      reset(out);
      out->error = 1;
      snprintf(out->message, sizeof(out->message),
               "%s is set but empty (it names the limits file; unset it to use the environment)",
               TESSERA_ENV_LIMITS_FILE);
      return;
    }
    load_file(named, out);
    return;
  }
  if (set_up_by_tessera(fixed_path)) {
    load_error(out, fixed_path,
               "the container was set up by Tessera (its allocation folder is there) but the "
               "file is missing");
    return;
  }
  load_env(out);
}
