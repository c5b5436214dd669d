#include "os.h"

#include "limits_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "at_fork.h"
#include "compute.h"
#include "limits_change.h"
#include "log.h"
#include "region.h"
#include "state.h"

#define DUE_NS                                                                       \
  200000000ull /* limits_watch_if_due looks at most this often (the reaper's period) \
                */

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Under g_mutex: the version of the file last read (applied, unchanged or refused); whether that
 * is set yet (else it is the version the process started with); whether the file's absence was
 * logged (once, until it is back); the text and parse of a new version (static: 68 KiB). */
static struct os_file_id g_seen;
static int g_seen_set;
static int g_gone_logged;
static char g_text[65536];
static struct hook_limits g_next;
static uint64_t g_looked_ns; /* when the last look began (atomic) */

static void watch_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mutex = fresh; /* the parent's reaper may have held it */
}
HOOK_RESET_IN_CHILD(watch_reset_in_child)

/* One line at info level per device whose limits changed. */
static void log_applied(const struct hook_limits* was, const struct hook_limits* now) {
  if (hook_log_level < HOOK_LOG_INFO) return;
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (was->memory[i] == now->memory[i] && was->spill[i] == now->spill[i] &&
        was->cores[i] == now->cores[i] && was->ceiling[i] == now->ceiling[i]) {
      continue;
    }
    hook_log(HOOK_LOG_INFO,
             "%s changed: device %d: memory %llu -> %llu bytes, spill %llu -> %llu bytes, cores "
             "%d -> %d%%, ceiling %d -> %d%% (0: none)",
             now->source, i, (unsigned long long)was->memory[i], (unsigned long long)now->memory[i],
             (unsigned long long)was->spill[i], (unsigned long long)now->spill[i], was->cores[i],
             now->cores[i], was->ceiling[i], now->ceiling[i]);
  }
}

/* The look itself, g_mutex held. */
static void look_locked(void) {
  const struct hook_limits* current = hook_limits();
  if (!g_seen_set) {
    g_seen = current->file_id;
    g_seen_set = 1;
  }
  struct os_file_id id;
  if (os_file_id(current->path, &id) != 0) {
    /* Gone or unreadable (never so on the node agent's rename): nothing to apply. */
    if (!g_gone_logged) {
      hook_log(HOOK_LOG_ERROR,
               "limits not changed: cannot read limits file %s: %s; the limits in "
               "force stay",
               current->path, strerror(errno));
      g_gone_logged = 1;
    }
    return;
  }
  g_gone_logged = 0;
  if (file_id_equal(&id, &g_seen)) return;
  hook_limits_read_file(current->path, g_text, sizeof(g_text), &g_next);
  /* A version that could not be read (replaced again meanwhile) is the stat'ed one: the next
   * look reads its successor. */
  g_seen = g_next.file_id.ino != 0 ? g_next.file_id : id;
  char why[1024];
  switch (limits_change_decide(current, &g_next, why, sizeof(why))) {
    case LIMITS_REFUSE:
      hook_log(HOOK_LOG_ERROR, "limits not changed: %s; the limits in force stay", why);
      break;
    case LIMITS_SAME:
      break;
    case LIMITS_APPLY:
      log_applied(current, &g_next);
      hook_limits_update(&g_next);
      compute_limits_changed();
      break;
  }
}

/* Looks unless another look is under way (the same thread's, when applying took a slot). */
static void look(void) {
  if (hook_state_init() != HOOK_ACTIVE || !hook_limits()->from_file) return;
  if (pthread_mutex_trylock(&g_mutex) != 0) return;
  __atomic_store_n(&g_looked_ns, os_now_ns(), __ATOMIC_RELAXED);
  look_locked();
  pthread_mutex_unlock(&g_mutex);
}

void limits_watch_if_due(void) {
  if (region_reaper_running()) return; /* it looks every round */
  uint64_t last = __atomic_load_n(&g_looked_ns, __ATOMIC_RELAXED);
  if (os_now_ns() - last >= DUE_NS) look();
}

/* Registered when the library is loaded: a function pointer each, nothing runs until a slot is
 * taken. */
__attribute__((constructor)) static void limits_watch_register(void) {
  region_each_round(look);
  region_on_slot(look);
}
