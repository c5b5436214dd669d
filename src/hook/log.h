/* Logging of libtessera-cuda.so: one line per message on stderr, prefixed with the library's name
 * and the PID. Silent at the default level (errors only, and the library reports none in normal
 * operation); TESSERA_LOG_LEVEL, or HAMi's LIBCUDA_LOG_LEVEL, raises it.
 *
 * Levels: error (0), warn (1), info (2), debug (3); names or numbers are accepted. An unknown
 * value leaves the level at error and is reported once as a warning.
 *
 * Thread-safety: hook_log may be called from any thread; the level is set once by hook_log_init. */
#ifndef TESSERA_HOOK_LOG_H_
#define TESSERA_HOOK_LOG_H_

enum hook_log_level {
  HOOK_LOG_ERROR = 0,
  HOOK_LOG_WARN = 1,
  HOOK_LOG_INFO = 2,
  HOOK_LOG_DEBUG = 3
};

extern int hook_log_level;

/* Reads the level from the environment (safe before main). */
void hook_log_init(void);

/* Parses a level name or number; returns -1 when it is neither. */
int hook_log_parse_level(const char* text);

void hook_log(int level, const char* format, ...) __attribute__((format(printf, 2, 3)));

#define HOOK_LOG(level, ...)                                     \
  do {                                                           \
    if ((level) <= hook_log_level) hook_log(level, __VA_ARGS__); \
  } while (0)

#endif /* TESSERA_HOOK_LOG_H_ */
