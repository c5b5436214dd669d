/* What this process's cuMemCreate handles hold, for the virtual memory management API (VMM). The
 * driver holds a handle's memory until every reference to it is released (cuMemRelease of the
 * creation and of each cuMemRetainAllocationHandle) AND every mapping of it is unmapped
 * (cuMemUnmap), so its charge is released with the last of these.
 * Handles: handle -> (container device index, charged bytes, number of mappings, references).
 * Mappings: mapped address -> (size, handle). Both are small arrays searched linearly.
 *
 * Thread-safety: none; the caller (hooks_vmm.c) serialises every call with its own mutex. After
 * fork() the child starts with empty tables (the handles belong to the parent; at_fork.h).
 *
 *   if (vmm_release(handle, &index, &bytes) == 1) region_uncharge(index, bytes);
 *
 * Why: docs/in-container-library.md, "What is enforced" (virtual memory management). */
#ifndef TESSERA_HOOK_VMM_MAP_H_
#define TESSERA_HOOK_VMM_MAP_H_

#include <stdint.h>

/* Records a new handle of `bytes` charged on device `index`. Returns 0, 1 when the handle was
 * still recorded (the driver reused a value whose release the library did not see: its old charge
 * is added to *stale_bytes on device *stale_index), or -1 when memory for the table ran out. */
int vmm_add_handle(uint64_t handle, int index, uint64_t bytes, int* stale_index,
                   uint64_t* stale_bytes);

/* The handle was released (one reference). Returns 1 when its charge is to be released now (no
 * reference or mapping left; the entry is gone and *index, *bytes say what), 0 when references or
 * mappings keep it, -1 when the handle is not recorded. */
int vmm_release(uint64_t handle, int* index, uint64_t* bytes);

/* cuMemRetainAllocationHandle gave a further reference to the handle. Returns 0, or -1 when the
 * handle is not recorded. */
int vmm_retain(uint64_t handle);

/* The handle was mapped at [va, va + size). Returns 0, or -1 when the handle is not recorded or
 * memory for the table ran out. */
int vmm_map(uint64_t va, uint64_t size, uint64_t handle);

/* [va, va + size) was unmapped: drops the mappings inside it and adds the charges of the released
 * handles they were the last mappings of to bytes_per_device[index]. Returns how many charges. */
int vmm_unmap(uint64_t va, uint64_t size, uint64_t* bytes_per_device, int devices);

#endif /* TESSERA_HOOK_VMM_MAP_H_ */
