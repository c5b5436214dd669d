#include "os.h"

#include "alloc_map.h"

#include <sched.h>
#include <stdlib.h>

#include "at_fork.h"

struct entry {
  uint64_t key;
  uint64_t bytes;
  uint64_t context;
  int32_t kind; /* 0 = empty, -1 = deleted */
  int32_t device;
};

/* A spin lock rather than a mutex: it is taken on every allocation and free and held for a few
 * dozen instructions, fewer than a mutex's lock and unlock take. A waiter that has spun for a
 * while yields the CPU, since the holder may have been preempted. */
static int g_lock;
static struct entry* g_table;
static size_t g_capacity; /* power of two */
static size_t g_live;
static size_t g_used; /* live + deleted */

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void table_lock(void) {
  if (__builtin_expect(!__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE), 1)) return;
  for (unsigned spins = 0;; ++spins) {
    if (!__atomic_load_n(&g_lock, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) {
      return;
    }
    if (spins < 128) {
      cpu_relax();
    } else {
      sched_yield();
    }
  }
}

static void table_unlock(void) {
  __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

static size_t hash(int kind, uint64_t key) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull ^ (uint64_t)kind * 0xC2B2AE3D27D4EB4Full;
  return (size_t)(h ^ (h >> 29));
}

static struct entry* find(int kind, uint64_t key) {
  if (g_table == NULL) return NULL;
  size_t mask = g_capacity - 1;
  for (size_t i = hash(kind, key) & mask, n = 0; n < g_capacity; i = (i + 1) & mask, ++n) {
    struct entry* e = &g_table[i];
    if (e->kind == 0) return NULL;
    if (e->kind == kind && e->key == key) return e;
  }
  return NULL;
}

static int grow(void) {
  size_t capacity = g_capacity ? g_capacity : 256;
  if (g_live * 2 >= capacity) capacity *= 2; /* otherwise: same size, drops deleted entries */
  struct entry* table = calloc(capacity, sizeof(*table));
  if (table == NULL) return -1;
  size_t mask = capacity - 1;
  for (size_t i = 0; i < g_capacity; ++i) {
    struct entry* e = &g_table[i];
    if (e->kind <= 0) continue;
    size_t j = hash(e->kind, e->key) & mask;
    while (table[j].kind != 0) j = (j + 1) & mask;
    table[j] = *e;
  }
  free(g_table);
  g_table = table;
  g_capacity = capacity;
  g_used = g_live;
  return 0;
}

/* The entry of (kind, key), or where to put it (the first deleted or empty entry of its probe
 * sequence, kind <= 0); NULL without a table. One pass: the allocation path calls it. */
static inline struct entry* find_or_free(int kind, uint64_t key) {
  if (g_table == NULL) return NULL;
  size_t mask = g_capacity - 1;
  struct entry* reusable = NULL;
  for (size_t i = hash(kind, key) & mask, n = 0; n < g_capacity; i = (i + 1) & mask, ++n) {
    struct entry* e = &g_table[i];
    if (e->kind == kind && e->key == key) return e;
    if (e->kind == 0) return reusable ? reusable : e;
    if (e->kind < 0 && reusable == NULL) reusable = e;
  }
  return reusable;
}

/* alloc_map_put and alloc_map_put_new: `keep` leaves an existing entry as it is. */
static int put(int kind, uint64_t key, int device, uint64_t bytes, uint64_t context, int keep,
               struct alloc_record* old) {
  table_lock();
  struct entry* e = find_or_free(kind, key);
  int existed = e != NULL && e->kind > 0;
  if (existed) {
    if (old != NULL) *old = (struct alloc_record){e->device, e->bytes, e->context};
    if (keep) {
      table_unlock();
      return 1;
    }
  } else {
    if ((g_used + 1) * 4 > g_capacity * 3) {
      if (grow() != 0) {
        table_unlock();
        return -1;
      }
      e = find_or_free(kind, key);
    }
    if (e->kind == 0) ++g_used;
    ++g_live;
  }
  e->kind = kind;
  e->key = key;
  e->device = device;
  e->bytes = bytes;
  e->context = context;
  table_unlock();
  return existed;
}

int alloc_map_put(int kind, uint64_t key, int device, uint64_t bytes, uint64_t context,
                  struct alloc_record* replaced) {
  return put(kind, key, device, bytes, context, 0, replaced);
}

int alloc_map_put_new(int kind, uint64_t key, int device, uint64_t bytes, uint64_t context) {
  return put(kind, key, device, bytes, context, 1, NULL);
}

int alloc_map_take(int kind, uint64_t key, int* device, uint64_t* bytes, uint64_t* context) {
  table_lock();
  struct entry* e = find(kind, key);
  if (e == NULL) {
    table_unlock();
    return -1;
  }
  *device = e->device;
  *bytes = e->bytes;
  if (context != NULL) *context = e->context;
  e->kind = -1;
  --g_live;
  /* A deleted entry followed by an empty one ends every probe sequence through it: it and the
   * deleted entries before it become empty again, so that allocating and freeing in turn does not
   * fill the table with deleted entries (longer probes, rehashes). */
  size_t mask = g_capacity - 1;
  size_t i = (size_t)(e - g_table);
  if (g_table[(i + 1) & mask].kind == 0) {
    while (g_table[i].kind == -1) {
      g_table[i].kind = 0;
      --g_used;
      i = (i - 1) & mask;
    }
  }
  table_unlock();
  return 0;
}

int alloc_map_take_context(uint64_t context, uint64_t* bytes_per_device, int devices) {
  int removed = 0;
  table_lock();
  for (size_t i = 0; i < g_capacity && context != 0; ++i) {
    struct entry* e = &g_table[i];
    if (e->kind <= 0 || e->context != context) continue;
    if (e->device >= 0 && e->device < devices) bytes_per_device[e->device] += e->bytes;
    e->kind = -1;
    --g_live;
    ++removed;
  }
  table_unlock();
  return removed;
}

int alloc_map_contains(int kind, uint64_t key) {
  table_lock();
  int found = find(kind, key) != NULL;
  table_unlock();
  return found;
}

void alloc_map_reset_in_child(void) {
  /* Another thread of the parent may have held the lock or been mid-update at fork(): start over
   * with a free lock and a fresh table (the old table is left behind, not freed: it may be torn).
   */
  g_lock = 0;
  g_table = NULL;
  g_capacity = 0;
  g_live = 0;
  g_used = 0;
}
HOOK_RESET_IN_CHILD(alloc_map_reset_in_child)
