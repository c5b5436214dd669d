/* Graph memory nodes (cuGraphAddMemAllocNode, and stream-ordered allocations captured into a
 * graph): the charge of a device's graph memory is what the device keeps for graphs
 * (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT): a launch backs the graph's allocations from it,
 * growing it when what it keeps unused is short, and it keeps the memory after the allocations
 * are freed, until cuDeviceGraphMemTrim.
 *
 * At instantiation the library sums the graph's allocation nodes per device; a launch of that
 * graph reserves the growth it may cause (its allocations less what is kept unused) before the
 * driver's call and settles to the driver's figure after it; over the limit the launch is refused
 * with CUDA_ERROR_OUT_OF_MEMORY. Launches of graphs without allocation nodes are not touched. The
 * charge follows the device's figure down at cuDeviceGraphMemTrim, memory queries and before an
 * allocation is refused (pool_refresh_all refreshes it too).
 *
 * Thread-safety: every function is thread-safe (one process-local mutex, held across a launch of
 * a graph with allocation nodes). After fork() the child calls graph_charge_reset_in_child(). */
#ifndef TESSERA_HOOK_GRAPH_CHARGE_H_
#define TESSERA_HOOK_GRAPH_CHARGE_H_

#include "abi/cuda_driver.h"

/* `exec` was instantiated from `graph`: records the allocation nodes' bytes per device. */
void graph_note_exec(CUgraphExec exec, CUgraph graph);

/* `exec` was destroyed. */
void graph_exec_destroyed(CUgraphExec exec);

/* Launches `exec` on `stream` with `launch` (the driver's cuGraphLaunch or _ptsz), charging the
 * growth of the devices' graph memory first. */
CUresult graph_launch(CUgraphExec exec, CUresult (*launch)(CUgraphExec, CUstream), CUstream stream);

/* Settles every device's graph memory charge to what the device keeps now. */
void graph_refresh_all(void);

void graph_charge_reset_in_child(void);

#endif /* TESSERA_HOOK_GRAPH_CHARGE_H_ */
