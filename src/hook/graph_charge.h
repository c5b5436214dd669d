/* Graph memory nodes (cuGraphAddMemAllocNode, and stream-ordered allocations captured into a
 * graph): a device's graph memory is charged what the device keeps for graphs
 * (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), which it keeps after the allocations are freed, until
 * cuDeviceGraphMemTrim. A launch of a graph with allocation nodes (summed per device at
 * instantiation) reserves the growth it may cause before the driver's call, is refused with
 * CUDA_ERROR_OUT_OF_MEMORY when that does not fit, and settles to the driver's figure after it;
 * other launches are not touched. The charge follows the figure down at cuDeviceGraphMemTrim,
 * memory queries and before an allocation is refused (pool_refresh_all refreshes it too).
 * Thread-safety: every function is thread-safe (one process-local mutex, held across a launch of
 * a graph with allocation nodes). After fork() the child starts with an empty table (at_fork.h).
 *
 *   graph_note_exec(exec, graph);                      (after the graph is instantiated)
 *   CUresult rc = graph_launch(exec, launch, stream);  (instead of the driver's cuGraphLaunch)
 *
 * Why: docs/in-container-library.md, "What is enforced" (graph memory). */
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

#endif /* TESSERA_HOOK_GRAPH_CHARGE_H_ */
