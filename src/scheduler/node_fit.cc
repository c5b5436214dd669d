#include "scheduler/node_fit.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <string_view>

namespace tessera::scheduler {
namespace {

// Concatenates `parts` with one allocation: filter builds a reason for every node that refuses a
// pod, thousands per call on a busy cluster.
std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (std::string_view p : parts) out += p;
  return out;
}

// vGPU slots left on a GPU; INT_MAX where it does not count them.
int FreeSlots(const GpuSlot& gpu, bool ignore_usage) {
  if (gpu.info.slots <= 0) return INT_MAX;
  return std::max(0, gpu.info.slots - (ignore_usage ? 0 : gpu.used_slots));
}

// What this pod already uses a GPU for (app containers only).
constexpr char kUnused = 0;
constexpr char kShared = 1;
constexpr char kExclusive = 2;

class Fitter {
 public:
  Fitter(const PodRequest& request, std::span<const GpuSlot> gpus, const FitOptions& options,
         FitScratch& s, FitOutput* out)
      : req_(request), gpus_(gpus), opt_(options), s_(s), out_(out) {}

  bool Run() {
    Reset();
    if (out_ && opt_.want_allocation) {
      out_->allocation.containers.assign(req_.containers.size(), {});
    }
    // App containers first, the hardest to place first; then init containers in their order.
    s_.order.clear();
    for (size_t i = 0; i < req_.containers.size(); ++i) {
      if (!req_.containers[i].init) s_.order.push_back(static_cast<int>(i));
    }
    // One app container, the common case, needs no sort (stable_sort allocates even for one).
    if (s_.order.size() > 1) SortHardestFirst();
    for (size_t i = 0; i < req_.containers.size(); ++i) {
      if (req_.containers[i].init) s_.order.push_back(static_cast<int>(i));
    }
    for (int index : s_.order) {
      const ContainerRequest& c = req_.containers[index];
      if (!Choose(c.gpu, c.init)) {
        if (out_ && opt_.want_reason) out_->reason = Explain(c);
        return false;
      }
      Apply(index, c);
    }
    return true;
  }

 private:
  Policy policy() const { return req_.gpu_policy.value_or(opt_.gpu_policy); }

  // App containers, the hardest to place first.
  void SortHardestFirst() {
    std::stable_sort(s_.order.begin(), s_.order.end(), [&](int a, int b) {
      const GpuRequest& x = req_.containers[a].gpu;
      const GpuRequest& y = req_.containers[b].gpu;
      if (x.count != y.count) return x.count > y.count;
      if (x.exclusive != y.exclusive) return x.exclusive;
      return x.memory_mib > y.memory_mib;
    });
  }

  void Reset() {
    size_t n = gpus_.size();
    s_.free_mib.resize(n);
    s_.free_cores.resize(n);
    s_.pod_mib.assign(n, 0);
    s_.pod_cores.assign(n, 0);
    s_.free_slots.resize(n);
    s_.pod_slots.assign(n, 0);
    s_.eligible.resize(n);
    s_.pod_exclusive.assign(n, kUnused);
    for (size_t g = 0; g < n; ++g) {
      const GpuSlot& slot = gpus_[g];
      uint64_t used = opt_.ignore_usage ? 0 : slot.used_mib;
      int used_cores = opt_.ignore_usage ? 0 : slot.used_cores;
      const uint64_t total = slot.info.virtual_memory_mib();
      s_.free_mib[g] = total > used ? total - used : 0;
      s_.free_cores[g] = std::max(0, 100 - used_cores);
      s_.free_slots[g] = FreeSlots(slot, opt_.ignore_usage);
      s_.eligible[g] =
          slot.info.shareable() && req_.selection.Allows(slot.info.model, slot.info.uuid);
    }
  }

  bool OthersOn(int g) const { return !opt_.ignore_usage && gpus_[g].pods > 0; }
  bool HeldExclusively(int g) const { return !opt_.ignore_usage && gpus_[g].exclusive_pods > 0; }

  bool ExclusivityAllows(int g, const GpuRequest& r, bool init) const {
    if (r.exclusive) return !OthersOn(g) && (init || s_.pod_exclusive[g] == kUnused);
    return !HeldExclusively(g) && (init || s_.pod_exclusive[g] != kExclusive);
  }

  // What placing `r` on GPU g adds to the pod's charge there.
  uint64_t ExtraMib(int g, const GpuRequest& r) const {
    uint64_t need = r.MemoryOn(gpus_[g].info.virtual_memory_mib());
    return need > s_.pod_mib[g] ? need - s_.pod_mib[g] : 0;
  }
  int ExtraCores(int g, const GpuRequest& r) const {
    return std::max(0, r.cores - s_.pod_cores[g]);
  }
  // App containers add up: charge their full request. Init containers overlap with the pod's
  // existing charge: only the excess is new.
  uint64_t AddMib(int g, const GpuRequest& r, bool init) const {
    return init ? ExtraMib(g, r) : r.MemoryOn(gpus_[g].info.virtual_memory_mib());
  }
  int AddCores(int g, const GpuRequest& r, bool init) const {
    return init ? ExtraCores(g, r) : r.cores;
  }
  // A slot-taking init container needs one only where the pod's app containers hold none.
  int AddSlots(int g, const GpuRequest& r, bool init) const {
    if (!r.slot) return 0;
    return init && s_.pod_slots[g] > 0 ? 0 : 1;
  }

  bool Admits(int g, const GpuRequest& r, bool init) const {
    if (!s_.eligible[g] || !ExclusivityAllows(g, r, init)) return false;
    uint64_t need = r.MemoryOn(gpus_[g].info.virtual_memory_mib());
    if (need == 0) return false;  // a GPU with no memory cannot hold anything
    return AddMib(g, r, init) <= s_.free_mib[g] && AddCores(g, r, init) <= s_.free_cores[g] &&
           AddSlots(g, r, init) <= s_.free_slots[g];
  }

  bool Choose(const GpuRequest& r, bool init) {
    s_.candidates.clear();
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) {
      if (Admits(g, r, init)) s_.candidates.push_back(g);
    }
    if (static_cast<int>(s_.candidates.size()) < r.count) return false;
    const bool binpack = policy() == Policy::kBinpack;
    std::sort(s_.candidates.begin(), s_.candidates.end(), [&](int a, int b) {
      if (init && (s_.pod_mib[a] > 0) != (s_.pod_mib[b] > 0)) return s_.pod_mib[a] > 0;
      uint64_t fa = s_.free_mib[a] - AddMib(a, r, init);
      uint64_t fb = s_.free_mib[b] - AddMib(b, r, init);
      if (fa != fb) return binpack ? fa < fb : fa > fb;
      int ca = s_.free_cores[a], cb = s_.free_cores[b];
      if (ca != cb) return binpack ? ca < cb : ca > cb;
      return a < b;
    });
    s_.chosen.clear();
    if (r.count > 1) {
      // Keep a multi-GPU container on one NUMA node when one has enough candidates: take the
      // first NUMA node, in policy order, that does.
      for (size_t i = 0; i < s_.candidates.size() && s_.chosen.empty(); ++i) {
        int numa = gpus_[s_.candidates[i]].info.numa;
        if (numa < 0) continue;
        int members = 0;
        for (int g : s_.candidates) members += gpus_[g].info.numa == numa;
        if (members < r.count) continue;
        for (int g : s_.candidates) {
          if (gpus_[g].info.numa == numa && static_cast<int>(s_.chosen.size()) < r.count) {
            s_.chosen.push_back(g);
          }
        }
      }
    }
    if (s_.chosen.empty()) {
      s_.chosen.assign(s_.candidates.begin(), s_.candidates.begin() + r.count);
    }
    return true;
  }

  void Apply(int index, const ContainerRequest& c) {
    const GpuRequest& r = c.gpu;
    ContainerAllocation* ca = nullptr;
    if (out_ && opt_.want_allocation) {
      ca = &out_->allocation.containers[index];
      ca->name = c.name;
      ca->init = c.init;
      ca->mode = r.mode;
      ca->slot = r.slot;
    }
    for (int g : s_.chosen) {
      uint64_t add_mib = AddMib(g, r, c.init);
      int add_cores = AddCores(g, r, c.init);
      int add_slots = AddSlots(g, r, c.init);
      s_.free_mib[g] -= add_mib;
      s_.free_cores[g] -= add_cores;
      s_.free_slots[g] -= add_slots;
      s_.pod_mib[g] += add_mib;
      s_.pod_cores[g] += add_cores;
      s_.pod_slots[g] += add_slots;
      if (!c.init) s_.pod_exclusive[g] = r.exclusive ? kExclusive : kShared;
      if (out_) out_->charged_mib += add_mib;
      if (ca) {
        ca->devices.push_back({gpus_[g].info.uuid, r.MemoryOn(gpus_[g].info.virtual_memory_mib()),
                               r.cores, r.cores_limit, r.exclusive});
      }
    }
  }

  std::string GpuName(int g) const {
    return Cat({"GPU ", std::to_string(gpus_[g].info.index), ", ", gpus_[g].info.model});
  }
  // ", virtual memory 48536 MiB = 24268 MiB x 2" for a GPU whose memory is scaled, else "".
  std::string VirtualMemoryNote(int g) const {
    const GpuInfo& info = gpus_[g].info;
    if (info.memory_scaling == 1) return "";
    return Cat({", virtual memory ", std::to_string(info.virtual_memory_mib()),
                " MiB = ", std::to_string(info.memory_mib), " MiB x ",
                annotations::MemoryScalingText(info.memory_scaling)});
  }

  std::string Explain(const ContainerRequest& c) const {
    const GpuRequest& r = c.gpu;
    std::string prefix;
    if (req_.containers.size() > 1) {
      prefix = Cat({c.init ? "init container \"" : "container \"", c.name, "\": "});
    }
    const int n = static_cast<int>(gpus_.size());
    const std::string count = std::to_string(r.count);
    const std::string_view gpus_word = r.count == 1 ? " GPU" : " GPUs";
    if (n == 0) {
      return Cat({prefix, "node has no GPUs in its ", kInventoryAnnotation, " inventory"});
    }
    int healthy = 0, mig = 0, matching = 0;
    for (int g = 0; g < n; ++g) {
      healthy += gpus_[g].info.shareable();
      mig += gpus_[g].info.healthy && gpus_[g].info.in_mig_mode();
      matching += s_.eligible[g];
    }
    if (matching < r.count) {
      if (healthy < r.count && req_.selection.empty()) {
        return Cat({prefix, "needs ", count, " distinct", gpus_word, ", node has ",
                    std::to_string(healthy), " healthy of ", std::to_string(n),
                    mig == 0 ? "" : " not in MIG mode (its MIG instances are not shared yet)"});
      }
      std::string models;
      for (int g = 0; g < n; ++g) {
        if (models.find(gpus_[g].info.model) == std::string::npos) {
          models += (models.empty() ? "" : ", ") + gpus_[g].info.model;
        }
      }
      return Cat({prefix, "needs ", count, gpus_word, " matching ", req_.selection.Describe(),
                  ", node has ", std::to_string(matching), " (its GPUs: ", models, ")"});
    }
    int exclusivity_ok = 0, slots_ok = 0, memory_ok = 0, cores_ok = 0;
    int best_mem = -1, best_cores = -1, full = -1;
    for (int g = 0; g < n; ++g) {
      if (!s_.eligible[g] || !ExclusivityAllows(g, r, c.init)) continue;
      ++exclusivity_ok;
      if (AddSlots(g, r, c.init) > s_.free_slots[g]) {
        if (full < 0) full = g;
        continue;
      }
      ++slots_ok;
      bool mem = AddMib(g, r, c.init) <= s_.free_mib[g];
      bool cores = AddCores(g, r, c.init) <= s_.free_cores[g];
      memory_ok += mem;
      cores_ok += cores;
      if (best_mem < 0 || s_.free_mib[g] > s_.free_mib[best_mem]) best_mem = g;
      if (best_cores < 0 || s_.free_cores[g] > s_.free_cores[best_cores]) best_cores = g;
    }
    if (exclusivity_ok < r.count) {
      if (r.exclusive) {
        return Cat({prefix, "needs ", count, gpus_word, " to itself (exclusive), only ",
                    std::to_string(exclusivity_ok), " of ", std::to_string(matching),
                    " are free of other pods"});
      }
      return Cat({prefix, "needs ", count, gpus_word, ", only ", std::to_string(exclusivity_ok),
                  " of ", std::to_string(matching), " are not held exclusively by another pod"});
    }
    if (slots_ok < r.count) {
      const std::string enough =
          r.count > 1 ? Cat({"; ", std::to_string(slots_ok), " GPUs have a free one"}) : "";
      return Cat({prefix, "no free vGPU slot: ", GpuName(full), " has all its ",
                  std::to_string(gpus_[full].info.slots),
                  " slots taken (the node's device-split-count)", enough});
    }
    if (memory_ok < r.count) {
      const std::string percent =
          r.memory_mib == 0 ? Cat({" (", std::to_string(r.memory_percent), "% of the GPU)"}) : "";
      const std::string enough =
          r.count > 1 ? Cat({"; ", std::to_string(memory_ok), " GPUs have enough"}) : "";
      return Cat({prefix, "insufficient GPU memory: need ",
                  std::to_string(AddMib(best_mem, r, c.init)), " MiB", percent, " on ", count,
                  gpus_word, ", largest free ", std::to_string(s_.free_mib[best_mem]), " MiB (",
                  GpuName(best_mem), VirtualMemoryNote(best_mem), ")", enough});
    }
    if (cores_ok < r.count) {
      const std::string enough =
          r.count > 1 ? Cat({"; ", std::to_string(cores_ok), " GPUs have enough"}) : "";
      return Cat({prefix, "insufficient GPU compute: need ", std::to_string(r.cores), "% cores on ",
                  count, gpus_word, ", most free ", std::to_string(s_.free_cores[best_cores]),
                  "% (", GpuName(best_cores), ")", enough});
    }
    return Cat({prefix, "insufficient GPU memory and compute together: need ", r.Describe(),
                ", fewer GPUs than that have both free"});
  }

  const PodRequest& req_;
  std::span<const GpuSlot> gpus_;
  const FitOptions& opt_;
  FitScratch& s_;
  FitOutput* out_;
};

// Whether a one-container pod fits, without choosing: filter's common case. Same rules as
// Fitter::Admits with nothing of the pod placed yet; for one container, enough admitting GPUs is
// all it takes.
bool FitsOneContainer(const PodRequest& request, std::span<const GpuSlot> gpus, bool ignore_usage) {
  const GpuRequest& r = request.containers.front().gpu;
  int admitted = 0;
  for (const GpuSlot& slot : gpus) {
    if (!slot.info.shareable()) continue;
    if (!ignore_usage && (r.exclusive ? slot.pods > 0 : slot.exclusive_pods > 0)) continue;
    uint64_t used = ignore_usage ? 0 : slot.used_mib;
    const uint64_t total = slot.info.virtual_memory_mib();
    uint64_t free = total > used ? total - used : 0;
    uint64_t need = r.MemoryOn(total);
    if (need == 0 || need > free) continue;
    int free_cores = std::max(0, 100 - (ignore_usage ? 0 : slot.used_cores));
    if (r.cores > free_cores) continue;
    if (r.slot && FreeSlots(slot, ignore_usage) < 1) continue;
    if (!request.selection.empty() && !request.selection.Allows(slot.info.model, slot.info.uuid)) {
      continue;
    }
    if (++admitted >= r.count) return true;
  }
  return false;
}

// Whether a request needs the same memory on every GPU of the node, so that its charge does not
// depend on which GPUs it gets.
bool SameNeedEverywhere(const GpuRequest& r, std::span<const GpuSlot> gpus) {
  if (r.memory_mib > 0) return true;
  return std::all_of(gpus.begin(), gpus.end(), [&](const GpuSlot& g) {
    return g.info.virtual_memory_mib() == gpus.front().info.virtual_memory_mib();
  });
}

}  // namespace

bool Fit(const PodRequest& request, std::span<const GpuSlot> gpus, const FitOptions& options,
         FitScratch& scratch, FitOutput* out) {
  if (!out && request.containers.size() == 1) {
    return FitsOneContainer(request, gpus, options.ignore_usage);
  }
  if (out) {
    out->charged_mib = 0;
    out->reason.clear();
    out->allocation = Allocation{};
  }
  return Fitter(request, gpus, options, scratch, out).Run();
}

std::optional<uint64_t> ChargedMib(const PodRequest& request, std::span<const GpuSlot> gpus,
                                   Policy gpu_policy, FitScratch& scratch) {
  if (request.containers.size() == 1) {
    const GpuRequest& r = request.containers.front().gpu;
    if (SameNeedEverywhere(r, gpus)) {
      if (!FitsOneContainer(request, gpus, /*ignore_usage=*/false)) return std::nullopt;
      return static_cast<uint64_t>(r.count) * r.MemoryOn(gpus.front().info.virtual_memory_mib());
    }
  }
  FitOutput out;
  if (!Fit(request, gpus, {.gpu_policy = gpu_policy}, scratch, &out)) return std::nullopt;
  return out.charged_mib;
}

int NodeScore(Policy policy, std::span<const GpuSlot> gpus, uint64_t charged_mib) {
  uint64_t total = 0, used = charged_mib;
  for (const GpuSlot& g : gpus) {
    if (!g.info.shareable()) continue;
    total += g.info.virtual_memory_mib();
    used += g.used_mib;
  }
  if (total == 0) return 0;
  double fraction = std::min(1.0, static_cast<double>(used) / static_cast<double>(total));
  int packed = static_cast<int>(std::lround(fraction * 10));
  return policy == Policy::kBinpack ? packed : 10 - packed;
}

}  // namespace tessera::scheduler
