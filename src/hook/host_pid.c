#include "os.h"

#include "host_pid.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/host_pids.h"
#include "abi/library_env.h"
#include "log.h"

#define PIDS_FILE_MAX (256u << 10) /* about 10000 processes */

/* Parses a decimal PID at *p, advancing past it; -1 when there is none. */
static long parse_pid(const char** p) {
  const char* s = *p;
  long value = 0;
  if (*s < '0' || *s > '9') return -1;
  while (*s >= '0' && *s <= '9') {
    value = value * 10 + (*s - '0');
    if (value > 0x7fffffff) return -1;
    ++s;
  }
  *p = s;
  return value;
}

/* The other PID of the line whose host PID (`by_host`) or own PID is `key`; 0 when no line has
 * it, -1 when the text is not a version 1 pids file. */
static pid_t lookup(const char* text, pid_t key, int by_host) {
  static const char kVersion[] = "version=1\n";
  if (strncmp(text, kVersion, sizeof(kVersion) - 1) != 0) return -1;
  for (const char* line = text + sizeof(kVersion) - 1; *line != '\0';) {
    const char* p = line;
    long host = parse_pid(&p);
    long own = -1;
    if (host > 0 && *p == ' ') {
      ++p;
      own = parse_pid(&p);
    }
    if (own < 0 || (*p != '\n' && *p != '\0')) return -1;
    if (!by_host && own == key) return (pid_t)host;
    if (by_host && host == key) return (pid_t)own;
    line = *p == '\n' ? p + 1 : p;
  }
  return 0;
}

pid_t host_pid_parse(const char* text, pid_t pid) {
  return lookup(text, pid, 0);
}

pid_t host_pid_own_parse(const char* text, pid_t host) {
  return lookup(text, host, 1);
}

static pid_t g_host_pid;  /* found host PID ... */
static pid_t g_found_for; /* ... of this process (a forked child looks again) */

/* The pids file's path: the agent's, else TESSERA_PIDS_FILE; NULL when there is none. */
static const char* pids_path(void) {
  if (access(TESSERA_PIDS_PATH, F_OK) == 0) return TESSERA_PIDS_PATH;
  const char* path = getenv(TESSERA_ENV_PIDS_FILE);
  return path != NULL && path[0] != '\0' ? path : NULL;
}

/* The pids file's text in a malloc'ed buffer (to be freed), or NULL when it cannot be read. */
static char* read_pids_file(const char* path) {
  char* text = malloc(PIDS_FILE_MAX);
  if (text != NULL && os_read_small_file(path, text, PIDS_FILE_MAX) != 0) {
    free(text);
    text = NULL;
  }
  return text;
}

pid_t hook_host_pid(void) {
  pid_t self = getpid();
  if (__atomic_load_n(&g_found_for, __ATOMIC_ACQUIRE) == self) {
    return __atomic_load_n(&g_host_pid, __ATOMIC_RELAXED);
  }
  const char* path = pids_path();
  if (path == NULL) return 0;
  char* text = read_pids_file(path);
  if (text == NULL) return 0;
  pid_t host = host_pid_parse(text, self);
  if (host < 0) {
    HOOK_LOG(HOOK_LOG_WARN, "%s is not a version %d pids file: ignored", path,
             TESSERA_PIDS_VERSION);
    host = 0;
  }
  free(text);
  if (host > 0) {
    __atomic_store_n(&g_host_pid, host, __ATOMIC_RELAXED);
    __atomic_store_n(&g_found_for, self, __ATOMIC_RELEASE);
  }
  return host;
}

char* hook_pids_text(void) {
  const char* path = pids_path();
  if (path == NULL) return NULL;
  char* text = read_pids_file(path);
  if (text != NULL && host_pid_parse(text, 0) < 0) {
    HOOK_LOG(HOOK_LOG_WARN, "%s is not a version %d pids file: ignored", path,
             TESSERA_PIDS_VERSION);
    free(text);
    return NULL;
  }
  return text;
}

int hook_host_pids(const pid_t* pids, int n, pid_t* hosts) {
  const char* path = pids_path();
  if (path == NULL) {
    for (int i = 0; i < n; ++i) hosts[i] = pids[i];
    return 0;
  }
  char* text = read_pids_file(path);
  if (text == NULL) return -1;
  int all = 1;
  for (int i = 0; i < n && all; ++i) {
    hosts[i] = host_pid_parse(text, pids[i]);
    all = hosts[i] > 0;
  }
  free(text);
  return all ? 1 : -1;
}
