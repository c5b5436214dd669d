#include "os.h"

#include "charge.h"

#include "alloc_map.h"
#include "graph_charge.h"
#include "log.h"
#include "pool_charge.h"
#include "real.h"
#include "region.h"
#include "state.h"

int charge_failed_mode(void) {
  return hook_state_init() == HOOK_FAILED;
}

void charge_refresh_held(void) {
  pool_refresh_all();
  graph_refresh_all();
}

/* A charge that did not fit: tries again once what pools and graphs hold is brought up to date
 * (they may have given memory back), else logs the refusal. Out of line: the allocation path's
 * common case stays small enough to inline. */
__attribute__((noinline, cold)) static int fits_after_refresh(int index, uint64_t charged,
                                                              uint64_t limit) {
  charge_refresh_held();
  if (region_charge(index, charged, limit) == 0) return 1;
  HOOK_LOG(HOOK_LOG_INFO,
           "refused %llu bytes on device %d: %llu of the limit %llu bytes are in use",
           (unsigned long long)charged, index, (unsigned long long)region_used(index),
           (unsigned long long)limit);
  return 0;
}

/* charge_reserve once the library is known to be active. */
static inline CUresult reserve(CUdevice dev, uint64_t bytes, int round, struct charge* c) {
  int index = hook_device_index(dev);
  if (index < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t charged = round ? hook_round_up(bytes, hook_granularity(dev)) : bytes;
  uint64_t limit = hook_limit_memory(index);
  if (region_charge(index, charged, limit) != 0 && !fits_after_refresh(index, charged, limit)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  c->active = 1;
  c->index = index;
  c->bytes = charged;
  return CUDA_SUCCESS;
}

CUresult charge_reserve(CUdevice dev, uint64_t bytes, int round, struct charge* c) {
  *c = (struct charge){.index = -1};
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  if (mode == HOOK_INACTIVE) return CUDA_SUCCESS;
  return reserve(dev, bytes, round, c);
}

CUresult charge_reserve_current(uint64_t bytes, int round, struct charge* c) {
  *c = (struct charge){.index = -1};
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  if (mode == HOOK_INACTIVE) return CUDA_SUCCESS;
  CUdevice dev;
  CUcontext ctx;
  if (hook_current_context(&ctx, &dev) != 0) return CUDA_SUCCESS; /* the driver fails it */
  c->context = (uint64_t)(uintptr_t)ctx;
  return reserve(dev, bytes, round, c);
}

void charge_give_back(int account, uint64_t bytes) {
  if (account >= TESSERA_MAX_DEVICES) {
    account -= TESSERA_MAX_DEVICES;
    region_spill_uncharge(account, bytes);
  }
  region_uncharge(account, bytes);
}

void charge_release_context(uint64_t context) {
  if (context == 0 || hook_state_init() != HOOK_ACTIVE) return;
  uint64_t bytes[CHARGE_ACCOUNTS] = {0};
  if (alloc_map_take_context(context, bytes, CHARGE_ACCOUNTS) == 0) return;
  for (int i = 0; i < CHARGE_ACCOUNTS; ++i) {
    if (bytes[i] == 0) continue;
    HOOK_LOG(HOOK_LOG_INFO, "context gone: released %llu bytes of its allocations on device %d%s",
             (unsigned long long)bytes[i], i % TESSERA_MAX_DEVICES,
             i >= TESSERA_MAX_DEVICES ? " (host memory)" : "");
    charge_give_back(i, bytes[i]);
  }
}

CUresult charge_grow(struct charge* c, uint64_t extra) {
  if (!c->active || extra == 0) return CUDA_SUCCESS;
  if (region_charge(c->index, extra, hook_limit_memory(c->index)) != 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  c->bytes += extra;
  return CUDA_SUCCESS;
}

void charge_shrink(struct charge* c, uint64_t less) {
  if (!c->active) return;
  if (less > c->bytes) less = c->bytes;
  region_uncharge(c->index, less);
  c->bytes -= less;
}

CUresult charge_finish(CUresult rc, struct charge* c, int kind, uint64_t key) {
  if (!c->active) return rc;
  if (rc != CUDA_SUCCESS) {
    region_uncharge(c->index, c->bytes);
    return rc;
  }
  struct alloc_record old;
  int put = alloc_map_put(kind, key, c->index, c->bytes, c->context, &old);
  if (put < 0) {
    HOOK_LOG(HOOK_LOG_WARN,
             "out of host memory for the allocation table: %llu bytes on device "
             "%d stay charged until exit",
             (unsigned long long)c->bytes, c->index);
  } else if (put > 0) {
    /* The driver handed out a handle the table still had: its old allocation was freed by a path
     * the library did not see, and so is its memory. */
    HOOK_LOG(HOOK_LOG_INFO, "handle %#llx came back: released the %llu bytes charged to it before",
             (unsigned long long)key, (unsigned long long)old.bytes);
    charge_give_back(old.device, old.bytes);
  }
  return rc;
}

int charge_finish_first(struct charge* c, int kind, uint64_t key) {
  if (!c->active) return 0;
  int put = alloc_map_put_new(kind, key, c->index, c->bytes, c->context);
  if (put == 0) return 0;
  region_uncharge(c->index, c->bytes); /* recorded by another thread first, or no table memory */
  return 1;
}

int charge_take(int kind, uint64_t key, struct charge* c) {
  c->active = 0;
  if (hook_state_init() != HOOK_ACTIVE) return 0;
  int device;
  uint64_t bytes, context;
  if (alloc_map_take(kind, key, &device, &bytes, &context) != 0) return 0; /* not ours */
  c->active = 1;
  c->index = device;
  c->bytes = bytes;
  c->context = context;
  return 1;
}

CUresult charge_release(CUresult rc, struct charge* c, int kind, uint64_t key) {
  if (!c->active) return rc;
  if (rc == CUDA_SUCCESS) {
    region_uncharge(c->index, c->bytes);
  } else {
    alloc_map_put(kind, key, c->index, c->bytes, c->context, NULL); /* taken just before */
  }
  return rc;
}
