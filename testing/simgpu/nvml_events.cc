// NVML events: Xid critical errors, posted by `simgpu xid` (and Xid 79 by `simgpu remove`).
// nvmlEventSetWait_v2 polls the state's event counter every 5 ms, so it wakes within a few
// milliseconds of an injection. An event set sees only events posted after it was created.
#include <map>
#include <mutex>
#include <set>

#include "clock.h"
#include "nvml_handles.h"

using namespace simgpu;

namespace {

constexpr uint64_t kPollNs = 5'000'000;
constexpr unsigned long long kSupported = nvmlEventTypeXidCriticalError;

struct EventSet {
  std::mutex mu;
  std::map<int, unsigned long long> devices;  // device index -> registered event types
  uint64_t last_seq = 0;                      // events up to this one were seen
};

// The live sets, guarded by g_sets_mu. Allocated while any set lives, so that nothing is left
// allocated once the library is unloaded (a static object could be destroyed at exit under a
// thread that still waits on a set).
std::mutex g_sets_mu;
std::set<EventSet*>* g_sets = nullptr;

bool Live(EventSet* set) {
  std::lock_guard<std::mutex> guard(g_sets_mu);
  return g_sets != nullptr && g_sets->count(set) != 0;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  *eventTypes = kSupported;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  auto* es = new EventSet();
  es->last_seq = s->XidSequence();
  {
    std::lock_guard<std::mutex> guard(g_sets_mu);
    if (g_sets == nullptr) g_sets = new std::set<EventSet*>();
    g_sets->insert(es);
  }
  *set = reinterpret_cast<nvmlEventSet_t>(es);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  auto* es = reinterpret_cast<EventSet*>(set);
  if (!Live(es)) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  if ((eventTypes & ~kSupported) != 0) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> guard(es->mu);
  es->devices[i] |= eventTypes;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  if (data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* es = reinterpret_cast<EventSet*>(set);
  if (!Live(es)) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  uint64_t deadline = NowNs() + static_cast<uint64_t>(timeoutms) * 1'000'000ull;
  while (true) {
    uint64_t seq = s->XidSequence();
    {
      std::lock_guard<std::mutex> guard(es->mu);
      // Events older than the ring holds are lost, as a real driver drops events nobody reads.
      if (seq - es->last_seq > static_cast<uint64_t>(kXidCapacity)) {
        es->last_seq = seq - kXidCapacity;
      }
      while (es->last_seq < seq) {
        uint64_t next = es->last_seq + 1;
        XidEvent ev;
        {
          SharedState::Lock lock(*s);
          ev = s->file().xids[next % kXidCapacity];
        }
        es->last_seq = next;
        if (ev.seq != next) continue;  // overwritten meanwhile
        auto it = es->devices.find(static_cast<int>(ev.device));
        if (it == es->devices.end() || (it->second & nvmlEventTypeXidCriticalError) == 0) continue;
        *data = nvmlEventData_t{};
        data->device = NvmlHandle(static_cast<int>(ev.device));
        data->eventType = nvmlEventTypeXidCriticalError;
        data->eventData = ev.xid;
        data->gpuInstanceId = 0xFFFFFFFFu;
        data->computeInstanceId = 0xFFFFFFFFu;
        return NVML_SUCCESS;
      }
    }
    uint64_t now = NowNs();
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    SleepForNs(std::min(kPollNs, deadline - now));
  }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  auto* es = reinterpret_cast<EventSet*>(set);
  {
    std::lock_guard<std::mutex> guard(g_sets_mu);
    if (g_sets == nullptr || g_sets->erase(es) == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (g_sets->empty()) {
      delete g_sets;
      g_sets = nullptr;
    }
  }
  delete es;
  return NVML_SUCCESS;
}

}  // extern "C"
