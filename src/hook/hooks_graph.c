/* Graph hooks for graph memory (graph_charge.h): instantiation records a graph's allocation nodes,
 * destruction forgets them, cuDeviceGraphMemTrim lets the charge follow the device's graph memory
 * down. The launch itself is in hooks_launch.c (it also passes the compute limiter). */
#include "os.h"

#include "charge.h"
#include "graph_charge.h"
#include "hooks.h"
#include "real.h"
#include "state.h"

typedef __typeof__(&cuGraphInstantiateWithFlags) instantiate_fn;
typedef __typeof__(&cuGraphExecDestroy) exec_destroy_fn;
typedef __typeof__(&cuDeviceGraphMemTrim) graph_trim_fn;

CUresult hook_graph_instantiate(void* real, CUgraphExec* exec, CUgraph graph,
                                unsigned long long flags) {
  instantiate_fn fn = (instantiate_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(exec, graph, flags);
  HOOK_SCOPE();
  if (charge_failed_mode()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(exec, graph, flags);
  if (rc == CUDA_SUCCESS && exec != NULL) graph_note_exec(*exec, graph);
  return rc;
}

CUresult hook_graph_exec_destroy(void* real, CUgraphExec exec) {
  exec_destroy_fn fn = (exec_destroy_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(exec);
  HOOK_SCOPE();
  CUresult rc = fn(exec);
  if (rc == CUDA_SUCCESS) graph_exec_destroyed(exec);
  return rc;
}

CUresult hook_graph_mem_trim(void* real, CUdevice dev) {
  graph_trim_fn fn = (graph_trim_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(dev);
  HOOK_SCOPE();
  CUresult rc = fn(dev);
  if (rc == CUDA_SUCCESS) graph_refresh_all();
  return rc;
}

HOOK_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                 unsigned long long flags) {
  return hook_graph_instantiate(real_fn(REAL_cuGraphInstantiateWithFlags), exec, graph, flags);
}
HOOK_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  return hook_graph_exec_destroy(real_fn(REAL_cuGraphExecDestroy), exec);
}
HOOK_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev) {
  return hook_graph_mem_trim(real_fn(REAL_cuDeviceGraphMemTrim), dev);
}
