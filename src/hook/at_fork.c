#include "os.h"

#include "at_fork.h"

#include <pthread.h>

#include "log.h"

/* More than the library's modules with state: a registration past it is a build's mistake. */
#define MAX_RESETS 16

static void (*g_resets[MAX_RESETS])(void);
static int g_count;

void hook_at_fork_register(void (*reset)(void)) {
  if (g_count < MAX_RESETS) {
    g_resets[g_count++] = reset;
  } else {
    hook_log(HOOK_LOG_ERROR, "more than %d modules reset after fork(): one is left out",
             MAX_RESETS);
  }
}

static void run_resets(void) {
  for (int i = 0; i < g_count; ++i) g_resets[i]();
}

void hook_at_fork_arm(void) {
  pthread_atfork(NULL, NULL, run_resets);
}
