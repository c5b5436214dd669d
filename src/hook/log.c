#include "os.h"

#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/library_env.h"

int hook_log_level = HOOK_LOG_ERROR;

int hook_log_parse_level(const char* text) {
  static const char* const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; ++i) {
    if (strcasecmp(text, names[i]) == 0) return i;
  }
  if (strcasecmp(text, "warning") == 0) return HOOK_LOG_WARN;
  if (text[0] >= '0' && text[0] <= '9' && text[1] == '\0') {
    int n = text[0] - '0';
    return n > HOOK_LOG_DEBUG ? HOOK_LOG_DEBUG : n;
  }
  return -1;
}

void hook_log_init(void) {
  const char* names[] = {TESSERA_ENV_LOG_LEVEL, TESSERA_ENV_HAMI_LOG_LEVEL};
  for (int i = 0; i < 2; ++i) {
    const char* value = getenv(names[i]);
    if (value == NULL || value[0] == '\0') continue;
    int level = hook_log_parse_level(value);
    if (level < 0) {
      hook_log(HOOK_LOG_WARN,
               "%s=\"%s\" is not a log level (allowed: error, warn, info, debug or 0-3)", names[i],
               value);
      continue;
    }
    hook_log_level = level;
    return;
  }
}

void hook_log(int level, const char* format, ...) {
  static const char* const names[] = {"error", "warn", "info", "debug"};
  char line[1024];
  int n = snprintf(line, sizeof(line), "tessera-cuda[%d] %s: ", (int)getpid(),
                   names[level < 0   ? 0
                         : level > 3 ? 3
                                     : level]);
  if (n < 0) return;
  va_list args;
  va_start(args, format);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, format, args);
  va_end(args);
  if (m < 0) return;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  os_write_stderr(line, len);
}
