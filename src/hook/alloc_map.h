/* What this process allocated through the library: (kind, handle) -> (device index, charged
 * bytes, owning context). The device index is the charge's account (charge.h: plus
 * TESSERA_MAX_DEVICES for host memory served in place of the device's); the table does not look
 * into it. A free finds its charge here; a free of a handle that is not here
 * (allocated before the library was loaded, or by another path) passes through without touching the
 * shared region.
 *
 * An open-addressing hash table that grows as needed (calloc). Thread-safety: every function takes
 * the table's process-local spin lock. After fork() the child starts with an empty table (its
 * allocations belong to the parent; at_fork.h). */
#ifndef TESSERA_HOOK_ALLOC_MAP_H_
#define TESSERA_HOOK_ALLOC_MAP_H_

#include <stdint.h>

enum alloc_kind {
  ALLOC_POINTER = 1, /* cuMemAlloc*, managed, async, pools: the device pointer */
  ALLOC_ARRAY,       /* CUarray */
  ALLOC_MIPMAP,      /* CUmipmappedArray */
  ALLOC_CONTEXT,     /* cuCtxCreate's CUcontext */
  ALLOC_PRIMARY,     /* a device's primary context, keyed by CUdevice */
  ALLOC_HEAP         /* a context's device heap beyond its size at creation, keyed by CUcontext */
};

/* What an entry holds. */
struct alloc_record {
  int device;
  uint64_t bytes;
  uint64_t context;
};

/* Records an allocation. `context` is the context whose destruction frees the allocation (0:
 * none, e.g. cuMemCreate). Returns 0, or 1 when an entry with the same key was replaced (the
 * driver reused a handle whose free the library did not see: that memory is gone, and the caller
 * must release its charge, copied to *replaced unless NULL), or -1 when memory for the table ran
 * out. */
int alloc_map_put(int kind, uint64_t key, int device, uint64_t bytes, uint64_t context,
                  struct alloc_record* replaced);

/* Records an allocation unless the key is already there, atomically: 0 recorded, 1 the key was
 * there (nothing changed), -1 out of memory. */
int alloc_map_put_new(int kind, uint64_t key, int device, uint64_t bytes, uint64_t context);

/* Removes and returns an allocation; returns -1 when the key is unknown. `context` may be NULL. */
int alloc_map_take(int kind, uint64_t key, int* device, uint64_t* bytes, uint64_t* context);

/* Removes every allocation owned by `context` (the driver freed them with it) and adds their
 * bytes to bytes_per_device[device index]. Returns how many it removed. */
int alloc_map_take_context(uint64_t context, uint64_t* bytes_per_device, int devices);

/* Returns 1 when the key is recorded, without removing it. */
int alloc_map_contains(int kind, uint64_t key);

/* Empties the table (registered to run after fork(); tests call it for a fresh table). */
void alloc_map_reset_in_child(void);

#endif /* TESSERA_HOOK_ALLOC_MAP_H_ */
