#include "nvml_handles.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "visible_devices.h"

namespace simgpu {
namespace {

std::mutex g_mu;
int g_init_count = 0;            // guarded by g_mu
SharedState* g_state = nullptr;  // guarded by g_mu
std::vector<int> g_present;      // guarded by g_mu
NvmlDevice g_devices[kMaxDevices] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                                     {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

}  // namespace

std::vector<int> NvmlPresent() {
  std::lock_guard<std::mutex> guard(g_mu);
  return g_init_count > 0 ? g_present : std::vector<int>{};
}

SharedState* NvmlState() {
  std::lock_guard<std::mutex> guard(g_mu);
  return g_init_count > 0 ? g_state : nullptr;
}

nvmlDevice_t NvmlHandle(int index) {
  return reinterpret_cast<nvmlDevice_t>(&g_devices[index]);
}

nvmlReturn_t NvmlResolve(nvmlDevice_t device, SharedState** state, int* index) {
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  auto* d = reinterpret_cast<NvmlDevice*>(device);
  if (d < &g_devices[0] || d >= &g_devices[kMaxDevices] || d->index >= s->device_count()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  {
    SharedState::Lock lock(*s);
    if (s->file().devices[d->index].removed) return NVML_ERROR_GPU_IS_LOST;
  }
  *state = s;
  *index = d->index;
  return NVML_SUCCESS;
}

nvmlReturn_t NvmlInit() {
  std::lock_guard<std::mutex> guard(g_mu);
  if (g_state == nullptr) {
    tessera::Result<SharedState*> state = SharedState::Attach();
    if (!state.ok()) {
      fprintf(stderr, "simgpu: %s\n", state.status().message().c_str());
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    g_state = *state;
    g_present = PresentDevices(getenv("SIMGPU_DEV_ROOT"), g_state->file());
  }
  ++g_init_count;
  return NVML_SUCCESS;
}

nvmlReturn_t NvmlShutdown() {
  std::lock_guard<std::mutex> guard(g_mu);
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_init_count == 0) {
    // As with real NVML, the next nvmlInit starts afresh (and reads SIMGPU_STATE again).
    g_state = nullptr;
    SharedState::Detach();
  }
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const char* value, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, value, strlen(value) + 1);
  return NVML_SUCCESS;
}

}  // namespace simgpu
