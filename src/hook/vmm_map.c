#include "os.h"

#include "vmm_map.h"

#include <stdlib.h>

#include "at_fork.h"

struct vmm_handle {
  uint64_t handle;
  uint64_t bytes;
  uint32_t mappings;
  int32_t index;
  uint32_t refs; /* the creation and each cuMemRetainAllocationHandle, less the releases */
};

struct vmm_mapping {
  uint64_t va;
  uint64_t size;
  uint64_t handle;
};

static struct vmm_handle* g_handles;
static size_t g_handle_count, g_handle_capacity;
static struct vmm_mapping* g_mappings;
static size_t g_mapping_count, g_mapping_capacity;

/* Makes room for one more element of `size` bytes in *array; -1 when memory ran out. */
static int reserve_one(void** array, size_t* capacity, size_t count, size_t size) {
  if (count < *capacity) return 0;
  size_t grown = *capacity ? *capacity * 2 : 64;
  void* bigger = realloc(*array, grown * size);
  if (bigger == NULL) return -1;
  *array = bigger;
  *capacity = grown;
  return 0;
}

static struct vmm_handle* find_handle(uint64_t handle) {
  for (size_t i = 0; i < g_handle_count; ++i) {
    if (g_handles[i].handle == handle) return &g_handles[i];
  }
  return NULL;
}

static void drop_handle(struct vmm_handle* h) {
  *h = g_handles[--g_handle_count];
}

int vmm_add_handle(uint64_t handle, int index, uint64_t bytes, int* stale_index,
                   uint64_t* stale_bytes) {
  struct vmm_handle* h = find_handle(handle);
  int stale = h != NULL;
  if (stale) {
    *stale_index = h->index;
    *stale_bytes = h->bytes;
  } else {
    if (reserve_one((void**)&g_handles, &g_handle_capacity, g_handle_count, sizeof(*g_handles))) {
      return -1;
    }
    h = &g_handles[g_handle_count++];
  }
  *h = (struct vmm_handle){.handle = handle, .bytes = bytes, .index = index, .refs = 1};
  return stale;
}

int vmm_release(uint64_t handle, int* index, uint64_t* bytes) {
  struct vmm_handle* h = find_handle(handle);
  if (h == NULL) return -1;
  if (h->refs > 0) --h->refs;
  if (h->refs > 0 || h->mappings > 0) return 0;
  *index = h->index;
  *bytes = h->bytes;
  drop_handle(h);
  return 1;
}

int vmm_retain(uint64_t handle) {
  struct vmm_handle* h = find_handle(handle);
  if (h == NULL) return -1;
  ++h->refs;
  return 0;
}

int vmm_map(uint64_t va, uint64_t size, uint64_t handle) {
  struct vmm_handle* h = find_handle(handle);
  if (h == NULL) return -1;
  if (reserve_one((void**)&g_mappings, &g_mapping_capacity, g_mapping_count, sizeof(*g_mappings))) {
    return -1;
  }
  g_mappings[g_mapping_count++] = (struct vmm_mapping){va, size, handle};
  ++h->mappings;
  return 0;
}

int vmm_unmap(uint64_t va, uint64_t size, uint64_t* bytes_per_device, int devices) {
  int released = 0;
  uint64_t end = va + size < va ? UINT64_MAX : va + size;
  for (size_t i = 0; i < g_mapping_count;) {
    struct vmm_mapping* m = &g_mappings[i];
    if (m->va < va || m->va >= end) {
      ++i;
      continue;
    }
    struct vmm_handle* h = find_handle(m->handle);
    *m = g_mappings[--g_mapping_count];
    if (h == NULL || --h->mappings > 0 || h->refs > 0) continue;
    if (h->index >= 0 && h->index < devices) bytes_per_device[h->index] += h->bytes;
    drop_handle(h);
    ++released;
  }
  return released;
}

static void vmm_map_reset_in_child(void) {
  /* The parent's tables are left behind, not freed: another thread may have been changing them. */
  g_handles = NULL;
  g_handle_count = g_handle_capacity = 0;
  g_mappings = NULL;
  g_mapping_count = g_mapping_capacity = 0;
}
HOOK_RESET_IN_CHILD(vmm_map_reset_in_child)
