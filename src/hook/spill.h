/* Serving allocations from host memory when the device is full (issue 33), for containers whose
 * limits file gives spill.<i> > 0. The policy: device memory first; an allocation the device
 * cannot hold (the driver answered CUDA_ERROR_OUT_OF_MEMORY) is served whole from host memory the
 * device can address; nothing the application allocated is ever moved. The container's limit
 * counts both (the charge is made before the driver's call, as for any allocation), and spill.<i>
 * bounds the host part; host memory is taken only when the container's memory cgroup and the node
 * keep their margins after it (host_room.h). Every refusal is CUDA_ERROR_OUT_OF_MEMORY.
 *
 * - cuMemAlloc_v2 / cuMemAllocPitch_v2: mapped pinned memory, cuMemHostAlloc(DEVICEMAP |
 *   PORTABLE), whose device pointer under unified addressing is the host pointer: the handle the
 *   application frees is the one it was given. Freed by cuMemFreeHost.
 * - cuMemCreate: the same properties with the physical location on the host (the device's host
 *   NUMA node, else CU_MEM_LOCATION_TYPE_HOST when no handle type is asked for); mapping and
 *   cuMemSetAccess then work as for device memory.
 *
 * Called only after the driver refused for lack of memory: nothing here is on the path of an
 * allocation the device holds. Why, and what is not spilled: docs/in-container-library.md,
 * "Memory beyond the device (spill)".
 *
 * Thread-safety: the functions are thread-safe; a struct charge belongs to one call. */
#ifndef TESSERA_HOOK_SPILL_H_
#define TESSERA_HOOK_SPILL_H_

#include <stddef.h>

#include "abi/cuda_driver.h"
#include "charge.h"

/* After the driver's CUDA_ERROR_OUT_OF_MEMORY for an allocation reserved in `c`: serves `bytes`
 * from mapped pinned host memory into *dptr and marks `c` spilled (its index becomes its account).
 * Returns CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY (no spilling configured, spill.<i> or host
 * memory short) with nothing of its own left charged; the caller's reservation is then rolled back
 * by charge_finish. */
CUresult spill_mem_alloc(struct charge* c, size_t bytes, CUdeviceptr* dptr);

/* Frees a spilled allocation that charge_take found (charge_spilled) and releases its charge (or
 * puts the record back when the free fails). `async`: cuMemFreeAsync on `stream`, which is waited
 * for first (the application may still use the memory on it); refused with CUDA_ERROR_INVALID_VALUE
 * while the stream is being captured, where a free must name a graph allocation. */
CUresult spill_mem_free(struct charge* c, CUdeviceptr dptr, int async, CUstream stream);

/* After the driver's CUDA_ERROR_OUT_OF_MEMORY for cuMemCreate (`create`, the real function) of
 * device `dev` with `prop`: creates the handle with the same properties on the host and marks
 * `c` spilled. Returns as spill_mem_alloc. */
CUresult spill_mem_create(void* create, CUmemGenericAllocationHandle* handle, size_t bytes,
                          const CUmemAllocationProp* prop, unsigned long long flags, CUdevice dev,
                          struct charge* c);

#endif /* TESSERA_HOOK_SPILL_H_ */
