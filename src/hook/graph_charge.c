#include "os.h"

#include "graph_charge.h"

#include <pthread.h>
#include <stdlib.h>

#include "at_fork.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* A graph with allocation nodes: its bytes per CUDA device. */
struct graph_exec {
  uint64_t exec;
  uint64_t bytes[HOOK_MAX_CUDA_DEVICES];
};

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct graph_exec* g_execs;
static size_t g_count, g_capacity;
static uint64_t g_charged[HOOK_MAX_CUDA_DEVICES]; /* per CUDA device: graph memory charged */
static int g_charged_devices;                     /* how many g_charged[] are not 0 */

static struct graph_exec* find(CUgraphExec exec) {
  for (size_t i = 0; i < g_count; ++i) {
    if (g_execs[i].exec == (uint64_t)(uintptr_t)exec) return &g_execs[i];
  }
  return NULL;
}

static int reserved_of(CUdevice dev, uint64_t* reserved, uint64_t* used) {
  __typeof__(&cuDeviceGetGraphMemAttribute) get = REAL(cuDeviceGetGraphMemAttribute);
  return get != NULL &&
                 get(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, reserved) == CUDA_SUCCESS &&
                 (used == NULL ||
                  get(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, used) == CUDA_SUCCESS)
             ? 0
             : -1;
}

/* Makes device `dev`'s charge `reserved` (up even past the limit: the device holds it). */
static void settle(CUdevice dev, uint64_t reserved) {
  int index = hook_device_index(dev);
  if (index < 0 || reserved == g_charged[dev]) return;
  if (reserved < g_charged[dev]) {
    region_uncharge(index, g_charged[dev] - reserved);
  } else {
    region_charge(index, reserved - g_charged[dev], 0);
  }
  int change = (reserved != 0) - (g_charged[dev] != 0);
  if (change != 0) __atomic_add_fetch(&g_charged_devices, change, __ATOMIC_RELAXED);
  g_charged[dev] = reserved;
}

static void refresh_locked(void) {
  for (CUdevice dev = 0; dev < HOOK_MAX_CUDA_DEVICES; ++dev) {
    uint64_t reserved = 0;
    if (g_charged[dev] != 0 && reserved_of(dev, &reserved, NULL) == 0) settle(dev, reserved);
  }
}

void graph_note_exec(CUgraphExec exec, CUgraph graph) {
  __typeof__(&cuGraphGetNodes) get_nodes = REAL(cuGraphGetNodes);
  __typeof__(&cuGraphNodeGetType) get_type = REAL(cuGraphNodeGetType);
  __typeof__(&cuGraphMemAllocNodeGetParams) get_params = REAL(cuGraphMemAllocNodeGetParams);
  __typeof__(&cuDeviceGet) get_device = REAL(cuDeviceGet);
  size_t count = 0;
  if (hook_state_init() != HOOK_ACTIVE || get_nodes == NULL || get_type == NULL ||
      get_params == NULL || get_device == NULL || get_nodes(graph, NULL, &count) != CUDA_SUCCESS ||
      count == 0) {
    return;
  }
  CUgraphNode* nodes = calloc(count, sizeof(*nodes));
  struct graph_exec e = {.exec = (uint64_t)(uintptr_t)exec};
  int any = 0;
  if (nodes != NULL && get_nodes(graph, nodes, &count) == CUDA_SUCCESS) {
    for (size_t i = 0; i < count; ++i) {
      CUgraphNodeType type;
      CUDA_MEM_ALLOC_NODE_PARAMS params;
      CUdevice dev;
      if (get_type(nodes[i], &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
          get_params(nodes[i], &params) != CUDA_SUCCESS ||
          get_device(&dev, params.poolProps.location.id) != CUDA_SUCCESS ||
          (unsigned)dev >= HOOK_MAX_CUDA_DEVICES) {
        continue;
      }
      e.bytes[dev] += hook_round_up(params.bytesize, hook_granularity(dev));
      any = 1;
    }
  }
  free(nodes);
  if (!any) return;
  pthread_mutex_lock(&g_mutex);
  struct graph_exec* slot = find(exec);
  if (slot == NULL && g_count == g_capacity) {
    size_t grown = g_capacity ? g_capacity * 2 : 16;
    struct graph_exec* bigger = realloc(g_execs, grown * sizeof(*bigger));
    if (bigger != NULL) {
      g_execs = bigger;
      g_capacity = grown;
    }
  }
  if (slot == NULL && g_count < g_capacity) slot = &g_execs[g_count++];
  if (slot != NULL) *slot = e;
  pthread_mutex_unlock(&g_mutex);
  if (slot == NULL) HOOK_LOG(HOOK_LOG_WARN, "out of host memory for the graph table");
}

void graph_exec_destroyed(CUgraphExec exec) {
  pthread_mutex_lock(&g_mutex);
  struct graph_exec* e = find(exec);
  if (e != NULL) *e = g_execs[--g_count];
  pthread_mutex_unlock(&g_mutex);
}

CUresult graph_launch(CUgraphExec exec, CUresult (*launch)(CUgraphExec, CUstream),
                      CUstream stream) {
  if (hook_state_init() != HOOK_ACTIVE) return launch(exec, stream);
  pthread_mutex_lock(&g_mutex);
  struct graph_exec* found = find(exec);
  if (found == NULL) {
    pthread_mutex_unlock(&g_mutex);
    return launch(exec, stream);
  }
  struct graph_exec e = *found;
  uint64_t grown[HOOK_MAX_CUDA_DEVICES] = {0};
  CUresult rc = CUDA_SUCCESS;
  for (CUdevice dev = 0; dev < HOOK_MAX_CUDA_DEVICES && rc == CUDA_SUCCESS; ++dev) {
    uint64_t reserved = 0, used = 0;
    if (e.bytes[dev] == 0 || reserved_of(dev, &reserved, &used) != 0) continue;
    int index = hook_device_index(dev);
    if (index < 0) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
      break;
    }
    settle(dev, reserved);
    uint64_t unused = reserved > used ? reserved - used : 0;
    uint64_t growth = e.bytes[dev] > unused ? e.bytes[dev] - unused : 0;
    uint64_t limit = hook_limit_memory(index);
    if (growth > 0 && region_charge(index, growth, limit) != 0) {
      HOOK_LOG(HOOK_LOG_INFO, "refused a graph launch needing %llu more bytes on device %d",
               (unsigned long long)growth, index);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
      break;
    }
    grown[dev] = growth;
    if (growth > 0 && g_charged[dev] == 0) {
      __atomic_add_fetch(&g_charged_devices, 1, __ATOMIC_RELAXED);
    }
    g_charged[dev] += growth;
  }
  if (rc == CUDA_SUCCESS) rc = launch(exec, stream);
  for (CUdevice dev = 0; dev < HOOK_MAX_CUDA_DEVICES; ++dev) {
    uint64_t reserved = 0;
    if (e.bytes[dev] == 0) continue;
    if (reserved_of(dev, &reserved, NULL) == 0) {
      settle(dev, reserved);
    } else if (grown[dev] > 0) {
      settle(dev, g_charged[dev] - grown[dev]);
    }
  }
  pthread_mutex_unlock(&g_mutex);
  return rc;
}

void graph_refresh_all(void) {
  /* Without graphs with allocation nodes (most processes) this costs one load. */
  if (hook_state_init() != HOOK_ACTIVE ||
      __atomic_load_n(&g_charged_devices, __ATOMIC_RELAXED) == 0) {
    return;
  }
  pthread_mutex_lock(&g_mutex);
  refresh_locked();
  pthread_mutex_unlock(&g_mutex);
}

static void graph_charge_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mutex = fresh;
  g_execs = NULL; /* the parent's, left behind */
  g_count = g_capacity = 0;
  for (int i = 0; i < HOOK_MAX_CUDA_DEVICES; ++i) g_charged[i] = 0;
  g_charged_devices = 0;
}
HOOK_RESET_IN_CHILD(graph_charge_reset_in_child)
