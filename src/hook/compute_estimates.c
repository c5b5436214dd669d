#include "os.h"

#include "compute_estimates.h"

#include <pthread.h>

#include "at_fork.h"

struct estimate g_estimates[ESTIMATE_SETS * ESTIMATE_WAYS];
static uint8_t g_next_victim[ESTIMATE_SETS];
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

struct estimate* estimate_find(uintptr_t key) {
  struct estimate* set = estimate_set(key);
  for (int i = 0; i < ESTIMATE_WAYS; ++i) {
    if (__atomic_load_n(&set[i].key, __ATOMIC_ACQUIRE) == key) return &set[i];
  }
  return NULL;
}

/* g_mutex held. */
static struct estimate* get_locked(uintptr_t key) {
  struct estimate* e = estimate_find(key);
  if (e != NULL) return e;
  struct estimate* set = estimate_set(key);
  for (int i = 0; i < ESTIMATE_WAYS && e == NULL; ++i) {
    if (set[i].key == 0) e = &set[i];
  }
  if (e == NULL) {
    size_t index = (size_t)(set - g_estimates) / ESTIMATE_WAYS;
    e = &set[g_next_victim[index]];
    g_next_victim[index] = (uint8_t)((g_next_victim[index] + 1) % ESTIMATE_WAYS);
  }
  /* The cost goes first, so that a lookup that finds the new key never reads the old cost. */
  __atomic_store_n(&e->key, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&e->cost_ns, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&e->samples, 0, __ATOMIC_RELAXED);
  e->owed_launches = 0;
  e->owed_ns = 0;
  __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
  return e;
}

struct estimate* estimate_get(uintptr_t key) {
  pthread_mutex_lock(&g_mutex);
  struct estimate* e = get_locked(key);
  pthread_mutex_unlock(&g_mutex);
  return e;
}

void estimate_owe(uintptr_t key, uint64_t charged_ns) {
  pthread_mutex_lock(&g_mutex);
  struct estimate* e = get_locked(key);
  if (e->cost_ns == 0) {
    e->owed_launches++;
    e->owed_ns += charged_ns;
  }
  pthread_mutex_unlock(&g_mutex);
}

void estimate_take_owed(struct estimate* e, uint64_t* launches, uint64_t* charged_ns) {
  pthread_mutex_lock(&g_mutex);
  *launches = e->owed_launches;
  *charged_ns = e->owed_ns;
  e->owed_launches = 0;
  e->owed_ns = 0;
  pthread_mutex_unlock(&g_mutex);
}

uint64_t estimate_fold(uint64_t cost, uint32_t* samples, uint64_t span) {
  if (span == 0) span = 1; /* a kernel that takes no measurable time is still a known one */
  uint32_t n = *samples < UINT32_MAX ? *samples + 1 : UINT32_MAX;
  /* A first span has no estimate to be trimmed to and can hold the process's start-up (the
   * module loaded at a function's first launch): a later span far under the plain mean shows it. */
  if (cost != 0 && n <= MEAN_FIRST && span < cost / RESTART) {
    cost = 0;
    n = 1;
  }
  if (cost != 0) {
    uint64_t most = cost * TRIM_HALVES / 2;
    if (span > most) span = most;
  }
  int64_t diff = (int64_t)span - (int64_t)cost;
  int64_t step = n <= MEAN_FIRST ? diff / (int64_t)n : diff / (1 << MEAN_SHIFT);
  uint64_t next = (uint64_t)((int64_t)cost + step);
  *samples = n;
  return next != 0 ? next : 1;
}

static void estimates_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mutex = fresh;
}
HOOK_RESET_IN_CHILD(estimates_reset_in_child)
