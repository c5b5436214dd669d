#include "os.h"

#include "host_room.h"

#include <stdio.h>
#include <string.h>

/* v1's "no limit" is a page counter's maximum (9223372036854771712 with 4 KiB pages): anything
 * from 2^62 up is no limit. */
#define V1_UNLIMITED (1ull << 62)

static int read_under(const char* root, const char* path, char* buffer, size_t size) {
  char full[4096];
  if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full)) return -1;
  return os_read_small_file(full, buffer, size);
}

/* The decimal number at the start of `text` (after spaces); -1 when there is none. */
static int parse_u64(const char* text, uint64_t* out) {
  const char* p = text;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p < '0' || *p > '9') return -1;
  uint64_t value = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    uint64_t digit = (uint64_t)(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) return -1;
    value = value * 10 + digit;
  }
  *out = value;
  return 0;
}

/* One cgroup level's limit - usage. Returns 1 when it has a limit (*free set), 0 when it has
 * none, -1 when its files are not there. `v2` selects the file names. */
static int level_free(const char* root, const char* dir, int v2, uint64_t* free_bytes) {
  char path[4096], text[64];
  uint64_t limit, usage;
  snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
  if (read_under(root, path, text, sizeof(text)) != 0 || parse_u64(text, &usage) != 0) return -1;
  snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
  if (read_under(root, path, text, sizeof(text)) != 0) return -1;
  if (strncmp(text, "max", 3) == 0) return 0;
  if (parse_u64(text, &limit) != 0) return -1;
  if (!v2 && limit >= V1_UNLIMITED) return 0;
  *free_bytes = limit > usage ? limit - usage : 0;
  return 1;
}

/* Walks from mount + path up to the mount, keeping the smallest free figure of the levels with a
 * limit. Returns how many levels had their files. */
static int walk(const char* root, const char* mount, const char* path, int v2,
                struct host_room* out) {
  char dir[4096];
  /* A path that climbs ("/.." from a process outside its cgroup namespace's root) names nothing
   * under the mount: the mount's own level is then the one to read. */
  if (strstr(path, "/..") != NULL) path = "";
  snprintf(dir, sizeof(dir), "%s%s", mount, strcmp(path, "/") == 0 ? "" : path);
  size_t mount_len = strlen(mount);
  int levels = 0;
  for (;;) {
    uint64_t free_bytes = 0;
    int rc = level_free(root, dir, v2, &free_bytes);
    if (rc >= 0) ++levels;
    if (rc == 1 && (!out->cgroup_limited || free_bytes < out->cgroup_free)) {
      out->cgroup_limited = 1;
      out->cgroup_free = free_bytes;
    }
    if (strlen(dir) <= mount_len) break;
    char* slash = strrchr(dir + mount_len, '/');
    if (slash == NULL) break;
    *slash = '\0';
  }
  return levels;
}

/* The path of the memory controller's cgroup in /proc/self/cgroup: v2's "0::<path>" line when
 * `v2`, else v1's line whose controllers include "memory". Returns 0, or -1 when there is none. */
static int cgroup_path(const char* text, int v2, char* path, size_t size) {
  for (const char* line = text; *line != '\0';) {
    const char* end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char* first = memchr(line, ':', len);
    const char* second = first ? memchr(first + 1, ':', len - (size_t)(first + 1 - line)) : NULL;
    if (second != NULL) {
      size_t controllers = (size_t)(second - first - 1);
      int match = 0;
      if (v2) {
        match = controllers == 0 && first - line == 1 && line[0] == '0';
      } else {
        /* "memory" as one of the comma-separated names. */
        for (const char* c = first + 1; c < second;) {
          const char* comma = memchr(c, ',', (size_t)(second - c));
          const char* stop = comma ? comma : second;
          if (stop - c == 6 && memcmp(c, "memory", 6) == 0) match = 1;
          c = stop + 1;
        }
      }
      size_t path_len = len - (size_t)(second + 1 - line);
      if (match && path_len < size) {
        memcpy(path, second + 1, path_len);
        path[path_len] = '\0';
        return 0;
      }
    }
    line = end ? end + 1 : line + len;
  }
  return -1;
}

void host_room_read(const char* root, struct host_room* out) {
  memset(out, 0, sizeof(*out));
  char text[4096], path[2048];
  if (read_under(root, "/proc/self/cgroup", text, sizeof(text)) == 0) {
    int levels = 0;
    if (cgroup_path(text, 1, path, sizeof(path)) == 0) {
      levels = walk(root, "/sys/fs/cgroup", path, 1, out);
    }
    /* No v2 memory files (v1, or hybrid with the memory controller on v1). */
    if (levels == 0 && cgroup_path(text, 0, path, sizeof(path)) == 0) {
      walk(root, "/sys/fs/cgroup/memory", path, 0, out);
    }
  }
  if (read_under(root, "/proc/meminfo", text, sizeof(text)) == 0) {
    const char* p = strstr(text, "MemAvailable:");
    uint64_t kib;
    if (p != NULL && parse_u64(p + strlen("MemAvailable:"), &kib) == 0 &&
        kib < (UINT64_MAX >> 10)) {
      out->node_known = 1;
      out->node_available = kib << 10;
    }
  }
}

/* Writes why `bytes` do not fit in `free_bytes` with `margin` left; returns -1. */
static int short_of(const char* what, uint64_t free_bytes, uint64_t bytes, uint64_t margin,
                    char* why, size_t why_size) {
  uint64_t need = bytes + margin;
  snprintf(why, why_size,
           "%s has %llu MiB free; %llu MiB more would leave less than the %llu MiB margin (short "
           "by %llu MiB)",
           what, (unsigned long long)(free_bytes >> 20), (unsigned long long)(bytes >> 20),
           (unsigned long long)(margin >> 20),
           (unsigned long long)((need - free_bytes + (1ull << 20) - 1) >> 20));
  return -1;
}

int host_room_check(const struct host_room* room, uint64_t bytes, char* why, size_t why_size) {
  if (bytes > UINT64_MAX - HOST_ROOM_NODE_MARGIN) bytes = UINT64_MAX - HOST_ROOM_NODE_MARGIN;
  if (room->cgroup_limited && room->cgroup_free < bytes + HOST_ROOM_CGROUP_MARGIN) {
    return short_of("the container's memory cgroup", room->cgroup_free, bytes,
                    HOST_ROOM_CGROUP_MARGIN, why, why_size);
  }
  if (!room->node_known) {
    snprintf(why, why_size, "the node's available memory cannot be read (/proc/meminfo)");
    return -1;
  }
  if (room->node_available < bytes + HOST_ROOM_NODE_MARGIN) {
    return short_of("the node", room->node_available, bytes, HOST_ROOM_NODE_MARGIN, why, why_size);
  }
  return 0;
}
