#include "os.h"

#include "pool_charge.h"

#include <pthread.h>
#include <stdlib.h>

#include "at_fork.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

#define POOL_ALIGNMENT 512 /* the driver's alignment of pool allocations */

struct pool_entry {
  uint64_t pool;    /* 0: destroyed with allocations outstanding (the driver still holds them) */
  uint64_t charged; /* what this process charged for it: its reserved size when last asked */
  int index;        /* container device index; -1: not one of the container's devices */
  int host;         /* a host pool: charges nothing */
};

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct pool_entry* g_pools;
static size_t g_count, g_capacity;

static struct pool_entry* find(CUmemoryPool pool) {
  for (size_t i = 0; i < g_count; ++i) {
    if (g_pools[i].pool == (uint64_t)(uintptr_t)pool) return &g_pools[i];
  }
  return NULL;
}

static void set_location(struct pool_entry* e, CUdevice dev) {
  e->host = dev < 0;
  e->index = dev < 0 ? -1 : hook_device_index(dev);
}

/* The entry of `pool` (added, on device `dev`, when new); NULL without memory for it. */
static struct pool_entry* find_or_add(CUmemoryPool pool, CUdevice dev) {
  struct pool_entry* e = find(pool);
  if (e != NULL) return e;
  if (g_count == g_capacity) {
    size_t grown = g_capacity ? g_capacity * 2 : 16;
    struct pool_entry* bigger = realloc(g_pools, grown * sizeof(*bigger));
    if (bigger == NULL) return NULL;
    g_pools = bigger;
    g_capacity = grown;
  }
  e = &g_pools[g_count++];
  *e = (struct pool_entry){.pool = (uint64_t)(uintptr_t)pool};
  set_location(e, dev);
  return e;
}

/* Runs the calls between relaxed_begin and relaxed_end in relaxed capture mode, where the driver
 * allows any call that does not conflict with a capture: it takes reading a pool's attribute, a
 * synchronisation or a trim for a potentially unsafe call, which a stream capture in global mode
 * (any thread's) or thread-local mode (this thread's) refuses and is invalidated by, although the
 * program's own call that led the library here was allowed (on an H200 with driver 580 the
 * library's reading of the pool's reserve invalidated the capture of a stream-ordered
 * allocation; cuda-python#2834). */
static int relaxed_begin(CUstreamCaptureMode* mode) {
  __typeof__(&cuThreadExchangeStreamCaptureMode) exchange = REAL(cuThreadExchangeStreamCaptureMode);
  *mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  return exchange != NULL && exchange(mode) == CUDA_SUCCESS;
}

static void relaxed_end(int relaxed, CUstreamCaptureMode* mode) {
  if (relaxed) REAL(cuThreadExchangeStreamCaptureMode)(mode); /* the thread's own mode back */
}

static int attribute(CUmemoryPool pool, CUmemPool_attribute attr, uint64_t* value) {
  __typeof__(&cuMemPoolGetAttribute) get = REAL(cuMemPoolGetAttribute);
  if (get == NULL) return -1;
  CUstreamCaptureMode mode;
  int relaxed = relaxed_begin(&mode);
  CUresult rc = get(pool, attr, value);
  relaxed_end(relaxed, &mode);
  return rc == CUDA_SUCCESS ? 0 : -1;
}

/* Makes the entry's charge `reserved`: down always, up even past the limit (the driver holds it:
 * the charge must not be less). */
static void settle(struct pool_entry* e, uint64_t reserved) {
  if (e->index < 0 || reserved == e->charged) return;
  if (reserved < e->charged) {
    region_uncharge(e->index, e->charged - reserved);
  } else {
    region_charge(e->index, reserved - e->charged, 0);
  }
  e->charged = reserved;
}

/* Settles every entry; drops those the driver no longer knows. Under g_mutex. */
static void drop(struct pool_entry* e) {
  settle(e, 0);
  *e = g_pools[--g_count];
}

/* Settles every entry; drops those the driver no longer knows. Under g_mutex. */
static void refresh_locked(void) {
  for (size_t i = 0; i < g_count;) {
    struct pool_entry* e = &g_pools[i];
    uint64_t reserved = 0;
    if (e->pool == 0) {
      ++i; /* its memory goes with allocations the library cannot see: charged until exit */
    } else if (attribute((CUmemoryPool)(uintptr_t)e->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                         &reserved) == 0) {
      settle(e, reserved);
      ++i;
    } else {
      drop(e);
    }
  }
}

void pool_note(CUmemoryPool pool, CUdevice dev) {
  if (pool == NULL || hook_state_init() != HOOK_ACTIVE) return;
  pthread_mutex_lock(&g_mutex);
  struct pool_entry* e = find_or_add(pool, dev);
  if (e != NULL && e->charged == 0) set_location(e, dev);
  pthread_mutex_unlock(&g_mutex);
}

/* Undoes an allocation whose growth does not fit: frees it, waits for the free and gives the
 * pool's unused memory back down to `keep`, the wait and the trim in relaxed mode (this stream is
 * not capturing: its pool grew). */
static void undo(const struct pool_alloc_call* k, uint64_t keep) {
  __typeof__(&cuMemFreeAsync) free_async = REAL(cuMemFreeAsync);
  __typeof__(&cuStreamSynchronize) sync = REAL(cuStreamSynchronize);
  __typeof__(&cuMemPoolTrimTo) trim = REAL(cuMemPoolTrimTo);
  if (free_async != NULL) free_async(*k->dptr, k->stream);
  CUstreamCaptureMode mode;
  int relaxed = relaxed_begin(&mode);
  if (sync != NULL) sync(k->stream);
  if (trim != NULL) trim(k->pool, (size_t)keep);
  relaxed_end(relaxed, &mode);
  *k->dptr = 0;
}

CUresult pool_alloc(const struct pool_alloc_call* k, CUdevice dev) {
  pthread_mutex_lock(&g_mutex);
  struct pool_entry* e = find_or_add(k->pool, dev);
  uint64_t reserved = 0, used = 0;
  if (e == NULL || e->index < 0) {
    /* A host pool passes; a device that is not the container's gets nothing (as every path). */
    int host = e != NULL && e->host;
    pthread_mutex_unlock(&g_mutex);
    return host ? k->call(k) : CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (attribute(k->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != 0 ||
      attribute(k->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != 0) {
    pthread_mutex_unlock(&g_mutex);
    return k->call(k); /* not a pool (the driver refuses it) */
  }
  settle(e, reserved);
  uint64_t limit = hook_limit_memory(e->index);
  uint64_t unused = reserved > used ? reserved - used : 0;
  uint64_t aligned = hook_round_up(k->bytes, POOL_ALIGNMENT);
  uint64_t growth = aligned > unused ? hook_round_up(aligned - unused, hook_granularity(dev)) : 0;
  if (growth > 0 && region_charge(e->index, growth, limit) != 0) {
    refresh_locked();  /* other pools may hold less since the last synchronisation */
    e = find(k->pool); /* the refresh may have moved entries */
    if (e == NULL || region_charge(e->index, growth, limit) != 0) {
      pthread_mutex_unlock(&g_mutex);
      HOOK_LOG(HOOK_LOG_INFO, "refused a pool's growth of %llu bytes", (unsigned long long)growth);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  e->charged += growth;
  CUresult rc = k->call(k);
  uint64_t after = e->charged;
  attribute(k->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &after);
  if (rc == CUDA_SUCCESS && after > e->charged &&
      region_charge(e->index, after - e->charged, limit) != 0) {
    /* The pool grew more than the request (fragmentation): over the limit. */
    undo(k, reserved);
    attribute(k->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &after);
    settle(e, after);
    pthread_mutex_unlock(&g_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc == CUDA_SUCCESS && after > e->charged) {
    e->charged = after;
  } else {
    settle(e, after);
  }
  pthread_mutex_unlock(&g_mutex);
  return rc;
}

void pool_refresh_all(void) {
  /* Without pools (most processes) the memory queries pay one load for this. */
  if (hook_state_init() != HOOK_ACTIVE || __atomic_load_n(&g_count, __ATOMIC_RELAXED) == 0) return;
  pthread_mutex_lock(&g_mutex);
  refresh_locked();
  pthread_mutex_unlock(&g_mutex);
}

int pool_outstanding(CUmemoryPool pool) {
  uint64_t used = 0;
  return attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != 0 || used > 0;
}

void pool_destroyed(CUmemoryPool pool, int outstanding) {
  pthread_mutex_lock(&g_mutex);
  struct pool_entry* e = find(pool);
  if (e != NULL && outstanding) {
    e->pool = 0; /* the handle value may come back for another pool */
  } else if (e != NULL) {
    drop(e);
  }
  pthread_mutex_unlock(&g_mutex);
}

static void pool_charge_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mutex = fresh;
  g_pools = NULL; /* the parent's, left behind */
  g_count = g_capacity = 0;
}
HOOK_RESET_IN_CHILD(pool_charge_reset_in_child)
