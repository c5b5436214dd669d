#include "scheduler/dialect.h"

#include <map>
#include <optional>

#include "common/json_text.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

constexpr int kMaxGpusPerContainer = 64;

std::string StringMember(const json& object, const char* key, const char* fallback) {
  const json* v = Member(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string(fallback);
}

// One container's quantities for a set of resource names: limits win, requests are the fallback,
// and both present with different values is an error (the API server rejects it too).
class Quantities {
 public:
  Quantities(const json& container, std::string context) : context_(std::move(context)) {
    const json* resources = Member(container, "resources");
    if (resources) {
      limits_ = Member(*resources, "limits");
      requests_ = Member(*resources, "requests");
    }
  }

  // The value of `name`, nullopt when absent.
  Result<std::optional<int64_t>> Get(const std::string& name) const {
    if (name.empty()) return std::optional<int64_t>();
    const json* limit = limits_ ? Member(*limits_, name.c_str()) : nullptr;
    const json* request = requests_ ? Member(*requests_, name.c_str()) : nullptr;
    if (!limit && !request) return std::optional<int64_t>();
    std::optional<int64_t> l, r;
    if (limit) {
      auto v = ParseWholeQuantity(*limit);
      if (!v.ok()) return Error(name, v.status().message());
      l = *v;
    }
    if (request) {
      auto v = ParseWholeQuantity(*request);
      if (!v.ok()) return Error(name, v.status().message());
      r = *v;
    }
    if (l && r && *l != *r) {
      return Error(name, "limit " + std::to_string(*l) + " and request " + std::to_string(*r) +
                             " differ: extended resources need equal limits and requests");
    }
    return l ? l : r;
  }

  bool Has(const std::string& name) const {
    if (name.empty()) return false;
    return (limits_ && Member(*limits_, name.c_str())) ||
           (requests_ && Member(*requests_, name.c_str()));
  }

  Status Error(const std::string& resource, const std::string& what) const {
    return InvalidArgument(context_ + ": " + resource + ": " + what);
  }
  const std::string& context() const { return context_; }

 private:
  std::string context_;
  const json* limits_ = nullptr;
  const json* requests_ = nullptr;
};

struct DialectUse {
  const char* name;
  std::string example;  // the first resource of it the container names
};

Result<std::optional<GpuRequest>> ParseVgpu(const Quantities& q, const DialectConfig& d) {
  ASSIGN_OR_RETURN(auto count, q.Get(d.vgpu_count));
  ASSIGN_OR_RETURN(auto memory, q.Get(d.vgpu_memory));
  ASSIGN_OR_RETURN(auto percent, q.Get(d.vgpu_memory_percent));
  ASSIGN_OR_RETURN(auto cores, q.Get(d.vgpu_cores));
  // A resource of 0 is the same as one left out, in every dialect (docs/scheduler.md).
  for (std::optional<int64_t>* v : {&memory, &percent, &cores}) {
    if (*v && **v == 0) v->reset();
  }
  if (!count && !memory && !percent && !cores) return std::optional<GpuRequest>();
  GpuRequest r;
  r.dialect = "vGPU";
  r.slot = true;
  // A memory or cores request without a count means one GPU, as in HAMi.
  r.count = count ? static_cast<int>(std::min<int64_t>(*count, kMaxGpusPerContainer + 1)) : 1;
  if (count && *count == 0) {
    // The one exception to the rule for 0: kubelet gives a container that asks for 0 of the
    // node's GPU resource no GPU at all, so memory or cores cannot go with it.
    if (memory || percent || cores) {
      return q.Error(d.vgpu_count,
                     "is 0 but the container also asks for GPU memory or cores: "
                     "set it to the number of GPUs (1 or more)");
    }
    return std::optional<GpuRequest>();
  }
  if (r.count > kMaxGpusPerContainer) {
    return q.Error(d.vgpu_count, std::to_string(*count) + " GPUs is more than the allowed " +
                                     std::to_string(kMaxGpusPerContainer) + " per container");
  }
  if (memory && percent) {
    return q.Error(d.vgpu_memory, "give either " + d.vgpu_memory + " (MiB) or " +
                                      d.vgpu_memory_percent + " (percent), not both");
  }
  if (memory) {
    r.memory_mib = static_cast<uint64_t>(*memory);
  }
  if (percent) {
    if (*percent < 1 || *percent > 100) {
      return q.Error(
          d.vgpu_memory_percent,
          std::to_string(*percent) + " is outside 1..100 (percent of each GPU's memory)");
    }
    r.memory_percent = static_cast<int>(*percent);
  }
  if (cores) {
    if (*cores > 100) {
      return q.Error(d.vgpu_cores,
                     std::to_string(*cores) + " is outside 0..100 (percent of each GPU's compute)");
    }
    r.cores = static_cast<int>(*cores);
    r.exclusive = r.cores == 100;
  }
  return std::optional<GpuRequest>(r);
}

Result<std::optional<GpuRequest>> ParseVcuda(const Quantities& q, const DialectConfig& d,
                                             const json* annotations) {
  ASSIGN_OR_RETURN(auto core, q.Get(d.vcuda_core));
  ASSIGN_OR_RETURN(auto memory, q.Get(d.vcuda_memory));
  if ((!core || *core == 0) && (!memory || *memory == 0)) return std::optional<GpuRequest>();
  GpuRequest r;
  r.dialect = "vcuda";
  r.count = 1;
  if (core && *core > 0) {
    if (*core < 100) {
      r.cores = static_cast<int>(*core);
    } else if (*core % 100 == 0 && *core / 100 <= kMaxGpusPerContainer) {
      r.count = static_cast<int>(*core / 100);
      r.cores = 100;
      r.exclusive = true;
    } else if (*core % 100 == 0) {
      return q.Error(d.vcuda_core, std::to_string(*core) + " asks for more than " +
                                       std::to_string(kMaxGpusPerContainer) + " whole GPUs");
    } else {
      return q.Error(d.vcuda_core,
                     std::to_string(*core) +
                         " is not allowed: use a value below 100 (that share of one GPU) or a "
                         "multiple of 100 (that many whole GPUs)");
    }
  }
  if (memory && *memory > 0) {
    uint64_t total = static_cast<uint64_t>(*memory) * d.vcuda_memory_unit_mib;
    // vcuda-memory is the container's total: split evenly over its GPUs.
    r.memory_mib = total / static_cast<uint64_t>(r.count);
    if (r.memory_mib == 0) return q.Error(d.vcuda_memory, "leaves less than 1 MiB per GPU");
  }
  if (const json* limit =
          annotations ? Member(*annotations, d.vcuda_core_limit_annotation.c_str()) : nullptr) {
    auto v = ParseWholeQuantity(*limit);
    if (!v.ok() || *v < r.cores || *v > 100 || *v == 0) {
      return InvalidArgument("annotation " + d.vcuda_core_limit_annotation + ": " + limit->dump() +
                             " is not allowed: use a whole percent from " +
                             std::to_string(std::max(r.cores, 1)) +
                             " (the container's vcuda-core) to 100");
    }
    if (!r.exclusive) {
      r.mode = ComputeMode::kElastic;
      r.cores_limit = static_cast<int>(*v);
    }
  }
  return std::optional<GpuRequest>(r);
}

Result<std::optional<GpuRequest>> ParseGpushare(const Quantities& q, const DialectConfig& d) {
  ASSIGN_OR_RETURN(auto memory, q.Get(d.gpushare_memory));
  if (!memory || *memory == 0) return std::optional<GpuRequest>();
  GpuRequest r;
  r.dialect = "gpushare";
  r.count = 1;
  r.memory_mib = static_cast<uint64_t>(*memory) * d.gpushare_unit_mib;
  return std::optional<GpuRequest>(r);
}

Result<std::optional<GpuRequest>> ParseContainer(const json& container, bool init,
                                                 const json* annotations, const DialectConfig& d) {
  std::string name = StringMember(container, "name", "?");
  Quantities q(container, std::string(init ? "init container \"" : "container \"") + name + "\"");

  std::vector<DialectUse> used;
  auto note = [&](bool enabled, const char* dialect, std::vector<const std::string*> names) {
    if (!enabled) return;
    for (const std::string* n : names) {
      if (q.Has(*n)) {
        used.push_back({dialect, *n});
        return;
      }
    }
  };
  note(d.vgpu_enabled, "vGPU",
       {&d.vgpu_count, &d.vgpu_memory, &d.vgpu_memory_percent, &d.vgpu_cores});
  note(d.vcuda_enabled, "vcuda", {&d.vcuda_core, &d.vcuda_memory});
  note(d.gpushare_enabled, "gpushare", {&d.gpushare_memory});
  // Refused rather than dropped: the pod would run without the priority its owner asked for, and
  // kube-scheduler would otherwise wait for a node that advertises the resource.
  if (d.vgpu_enabled && q.Has(kHamiPriorityResource)) {
    return q.Error(kHamiPriorityResource,
                   "HAMi's task priority has no counterpart in Tessera: containers that share a "
                   "GPU have no priority over each other, each is held to its own compute share "
                   "(" +
                       d.vgpu_cores + "); remove " + kHamiPriorityResource);
  }
  if (used.size() > 1) {
    return InvalidArgument(q.context() + " mixes dialects " + used[0].name + " (" +
                           used[0].example + ") and " + used[1].name + " (" + used[1].example +
                           "): use one dialect per container");
  }
  if (used.empty()) return std::optional<GpuRequest>();
  std::string dialect = used[0].name;
  if (dialect == "vGPU") return ParseVgpu(q, d);
  if (dialect == "vcuda") return ParseVcuda(q, d, annotations);
  return ParseGpushare(q, d);
}

std::vector<std::string> AnnotationList(const json* annotations, const char* key) {
  const json* v = annotations ? Member(*annotations, key) : nullptr;
  if (!v || !v->is_string()) return {};
  std::vector<std::string> out;
  for (const std::string& item : Split(v->get<std::string>(), ',')) {
    std::string t(Trim(item));
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

void Append(std::vector<std::string>& to, std::vector<std::string> from) {
  to.insert(to.end(), from.begin(), from.end());
}

// A policy annotation: absent, binpack or spread. HAMi's GPU policy also knows topology-aware
// (NVLink placement), which Tessera does not have: refused rather than placed otherwise.
Result<std::optional<Policy>> PolicyAnnotation(const json* annotations, const char* name) {
  const json* p = annotations ? Member(*annotations, name) : nullptr;
  if (p == nullptr) return std::optional<Policy>();
  std::optional<Policy> policy = p->is_string() ? ParsePolicy(p->get<std::string>()) : std::nullopt;
  if (policy) return policy;
  std::string why = p->is_string() && ToLower(Trim(p->get<std::string>())) == "topology-aware"
                        ? " is not supported: Tessera places GPUs by memory and compute only, "
                          "without NVLink topology; use binpack or spread"
                        : " is not allowed: use binpack or spread";
  return InvalidArgument(std::string("annotation ") + name + ": " + p->dump() + why);
}

}  // namespace

void MarkSlotContainers(const json& pod, const DialectConfig& dialects, Allocation& allocation) {
  const json* spec = Member(pod, "spec");
  if (!dialects.vgpu_enabled || !spec || !spec->is_object()) return;
  for (ContainerAllocation& ca : allocation.containers) {
    if (ca.slot) continue;
    for (const char* list : {"initContainers", "containers"}) {
      const json* containers = Member(*spec, list);
      if (!containers || !containers->is_array()) continue;
      for (const json& c : *containers) {
        if (!c.is_object() || StringMember(c, "name", "") != ca.name) continue;
        const json* resources = Member(c, "resources");
        const json* limits =
            resources && resources->is_object() ? Member(*resources, "limits") : nullptr;
        ca.slot = limits && limits->is_object() && limits->contains(dialects.vgpu_count);
      }
    }
  }
}

Result<PodRequest> ParsePod(const json& pod, const DialectConfig& dialects) {
  if (!pod.is_object()) return InvalidArgument("pod is not a JSON object");
  const json* metadata = Member(pod, "metadata");
  const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
  if (annotations && !annotations->is_object()) {
    return InvalidArgument("metadata.annotations is not an object");
  }
  const json* spec = Member(pod, "spec");
  if (!spec || !spec->is_object()) return InvalidArgument("pod has no spec object");

  PodRequest out;
  for (const char* list : {"initContainers", "containers"}) {
    const json* containers = Member(*spec, list);
    if (!containers) continue;
    if (!containers->is_array())
      return InvalidArgument(std::string("spec.") + list + " is not a list");
    bool init_list = std::string_view(list) == "initContainers";
    for (const json& c : *containers) {
      if (!c.is_object())
        return InvalidArgument(std::string("spec.") + list + " holds a non-object");
      // A restartable init container (a sidecar) runs beside the app containers: count it as one.
      bool init = init_list && StringMember(c, "restartPolicy", "") != "Always";
      ASSIGN_OR_RETURN(std::optional<GpuRequest> gpu,
                       ParseContainer(c, init, annotations, dialects));
      if (!gpu) continue;
      out.containers.push_back({StringMember(c, "name", ""), init, *gpu});
    }
  }

  Selection& s = out.selection;
  // Each include list may come from HAMi's annotation, Tessera's, or both; messages name the
  // ones the pod used.
  auto include = [&](const char* hami, const char* hami_short, const char* tessera,
                     std::vector<std::string>& list, std::string& from) {
    list = AnnotationList(annotations, hami);
    std::vector<std::string> own = AnnotationList(annotations, tessera);
    if (!own.empty()) from = list.empty() ? tessera : std::string(hami_short) + "+" + tessera;
    Append(list, std::move(own));
  };
  include(kUseGpuType, "use-gputype", kGpuModelAnnotation, s.use_types, s.use_types_from);
  s.nouse_types = AnnotationList(annotations, kNoUseGpuType);
  include(kUseGpuUuid, "use-gpuuuid", kGpuUuidAnnotation, s.use_uuids, s.use_uuids_from);
  s.nouse_uuids = AnnotationList(annotations, kNoUseGpuUuid);
  ASSIGN_OR_RETURN(std::optional<Policy> both, PolicyAnnotation(annotations, kPolicyAnnotation));
  ASSIGN_OR_RETURN(out.node_policy, PolicyAnnotation(annotations, kHamiNodePolicyAnnotation));
  ASSIGN_OR_RETURN(out.gpu_policy, PolicyAnnotation(annotations, kHamiGpuPolicyAnnotation));
  if (both) {
    for (auto [own, name] : {std::pair{&out.node_policy, kHamiNodePolicyAnnotation},
                             std::pair{&out.gpu_policy, kHamiGpuPolicyAnnotation}}) {
      if (*own && **own != *both) {
        return InvalidArgument(std::string("annotations ") + kPolicyAnnotation + ": " +
                               PolicyName(*both) + " and " + name + ": " + PolicyName(**own) +
                               " disagree: give one of them, or the same policy in both");
      }
      *own = both;
    }
  }
  return out;
}

}  // namespace tessera::scheduler
