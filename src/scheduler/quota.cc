#include "scheduler/quota.h"

#include <algorithm>

#include "annotations/gpu_config.h"
#include "common/json_text.h"
#include "common/quantity.h"

namespace tessera::scheduler {

using nlohmann::json;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
// Bounds far above any GPU (16 TiB of memory, 1024 GPUs in one request) that keep the sums of
// hostile values (a forged inventory, a claim's count of 2^53) from overflowing; an ask that
// large passes any quota anyway.
constexpr int64_t kMaxMemoryMiB = int64_t{1} << 24;
constexpr int64_t kMaxCount = 1024;

GpuUsage Max(const GpuUsage& a, const GpuUsage& b) {
  return {std::max(a.memory_bytes, b.memory_bytes), std::max(a.cores, b.cores)};
}

const json* Find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// The ask of one ExactDeviceRequest or DeviceSubRequest of the driver's class.
Result<GpuAsk> AskOfDeviceRequest(const json& body, const std::string& where, int max_gpus) {
  const json* admin = Find(body, "adminAccess");
  if (admin && admin->is_boolean() && admin->get<bool>()) return GpuAsk{};
  int64_t count = 1;
  if (TextOf(body, "allocationMode") == "All") {
    count = std::clamp<int64_t>(max_gpus, 1, kMaxCount);
  } else if (const json* c = Find(body, "count")) {
    Result<int64_t> v = ParseWholeQuantity(*c);
    if (!v.ok()) return InvalidArgument("request " + where + ": count: " + v.status().message());
    count = std::clamp<int64_t>(*v, 1, kMaxCount);
  }
  const json* capacity = Find(body, "capacity");
  const json* requests = capacity ? Find(*capacity, "requests") : nullptr;
  const json* memory = requests ? Find(*requests, "memory") : nullptr;
  const json* cores = requests ? Find(*requests, "cores") : nullptr;
  GpuAsk ask;
  if (memory) {
    Result<int64_t> v = ParseWholeQuantity(*memory);
    if (!v.ok()) {
      return InvalidArgument("request " + where +
                             ": capacity.requests.memory: " + v.status().message());
    }
    ask.memory_bytes = std::min(*v, kMaxMemoryMiB * kMiB) * count;
  }
  // Without a memory request the device's default applies: the whole GPU's memory.
  if (!memory || ask.memory_bytes == 0) ask.memory_percent = 100 * count;
  int64_t per_gpu = 0;
  if (cores) {
    Result<int64_t> v = ParseWholeQuantity(*cores);
    if (!v.ok()) {
      return InvalidArgument("request " + where +
                             ": capacity.requests.cores: " + v.status().message());
    }
    per_gpu = std::min<int64_t>(*v, 100);
  }
  // cores 0 is no compute limit: the claim may use all of the GPU's compute.
  ask.cores = (per_gpu == 0 ? 100 : per_gpu) * count;
  return ask;
}

std::string CoresText(int64_t cores) {
  return std::to_string(cores) + "% of a GPU";
}

}  // namespace

GpuUsage GpuAsk::Resolve(uint64_t largest_gpu_mib) const {
  const int64_t largest = static_cast<int64_t>(std::min<uint64_t>(largest_gpu_mib, kMaxMemoryMiB));
  return {memory_bytes + memory_percent * largest * kMiB / 100, cores};
}

GpuAsk& GpuAsk::operator+=(const GpuAsk& o) {
  memory_bytes += o.memory_bytes;
  memory_percent += o.memory_percent;
  cores += o.cores;
  return *this;
}

GpuUsage PodAsk::Resolve(uint64_t largest_gpu_mib) const {
  GpuUsage out = app.Resolve(largest_gpu_mib);
  for (const GpuAsk& i : init) out = Max(out, i.Resolve(largest_gpu_mib));
  return out;
}

bool PodAsk::empty() const {
  return app.empty() &&
         std::all_of(init.begin(), init.end(), [](const GpuAsk& a) { return a.empty(); });
}

GpuAsk AskOfGpu(const GpuRequest& gpu) {
  GpuAsk ask;
  const int64_t count = gpu.count;
  if (gpu.memory_mib > 0) {
    ask.memory_bytes =
        static_cast<int64_t>(std::min<uint64_t>(gpu.memory_mib, kMaxMemoryMiB)) * kMiB * count;
  } else {
    ask.memory_percent = int64_t{gpu.memory_percent} * count;
  }
  // An exclusive GPU, or a share without a compute limit, may use all of its compute.
  ask.cores = (gpu.exclusive || gpu.cores == 0 ? 100 : int64_t{gpu.cores}) * count;
  return ask;
}

PodAsk AskOfRequest(const PodRequest& request) {
  PodAsk ask;
  for (const ContainerRequest& c : request.containers) {
    if (c.init) {
      ask.init.push_back(AskOfGpu(c.gpu));
    } else {
      ask.app += AskOfGpu(c.gpu);
    }
  }
  return ask;
}

PodAsk AskOfPod(const PodRequest& request, const annotations::Allocation* decision) {
  PodAsk ask;
  for (const ContainerRequest& c : request.containers) {
    const annotations::ContainerAllocation* held = decision ? decision->Find(c.name) : nullptr;
    GpuAsk one;
    if (held && held->resized) {
      for (const annotations::DeviceAllocation& d : held->devices) {
        one.memory_bytes +=
            static_cast<int64_t>(std::min<uint64_t>(d.memory_mib, kMaxMemoryMiB)) * kMiB;
        one.cores += d.exclusive || d.cores == 0 ? 100 : d.cores;
      }
    } else {
      one = AskOfGpu(c.gpu);
    }
    if (c.init) {
      ask.init.push_back(one);
    } else {
      ask.app += one;
    }
  }
  return ask;
}

Result<GpuAsk> AskOfClaimSpec(const json& spec, int max_gpus) {
  GpuAsk total;
  const json* devices = Find(spec, "devices");
  const json* requests = devices ? Find(*devices, "requests") : nullptr;
  if (!requests || !requests->is_array()) return total;
  for (const json& r : *requests) {
    const std::string name = TextOf(r, "name");
    if (const json* exactly = Find(r, "exactly");
        exactly && TextOf(*exactly, "deviceClassName") == annotations::kGpuConfigDriver) {
      ASSIGN_OR_RETURN(GpuAsk ask, AskOfDeviceRequest(*exactly, name, max_gpus));
      total += ask;
    }
    const json* first = Find(r, "firstAvailable");
    if (!first || !first->is_array()) continue;
    // Which subrequest is allocated is not known before allocation: the largest counts.
    GpuAsk largest;
    for (const json& sub : *first) {
      if (TextOf(sub, "deviceClassName") != annotations::kGpuConfigDriver) continue;
      ASSIGN_OR_RETURN(GpuAsk ask,
                       AskOfDeviceRequest(sub, name + "/" + TextOf(sub, "name"), max_gpus));
      largest.memory_bytes = std::max(largest.memory_bytes, ask.memory_bytes);
      largest.memory_percent = std::max(largest.memory_percent, ask.memory_percent);
      largest.cores = std::max(largest.cores, ask.cores);
    }
    total += largest;
  }
  return total;
}

Result<std::optional<QuotaLimits>> LimitsOfQuota(const json& resource_quota) {
  const json* metadata = Find(resource_quota, "metadata");
  const json* spec = Find(resource_quota, "spec");
  const json* hard = spec ? Find(*spec, "hard") : nullptr;
  if (!hard) return std::optional<QuotaLimits>();
  QuotaLimits limits{.name = metadata ? TextOf(*metadata, "name") : ""};
  for (auto [key, slot] : {std::pair{kQuotaGpuMemory, &limits.memory_bytes},
                           std::pair{kQuotaGpuCores, &limits.cores}}) {
    const json* value = Find(*hard, key);
    if (!value) continue;
    Result<int64_t> v = ParseWholeQuantity(*value);
    if (!v.ok()) {
      return InvalidArgument("ResourceQuota " + limits.name + ": spec.hard." + key + ": " +
                             v.status().message());
    }
    *slot = *v;
  }
  if (!limits.memory_bytes && !limits.cores) return std::optional<QuotaLimits>();
  return std::optional<QuotaLimits>(limits);
}

std::string BytesText(int64_t bytes) {
  if (bytes != 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes != 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes == 0) return "0 GiB";
  return std::to_string(bytes) + " bytes";
}

std::string QuotaDenial(const std::string& ns, const QuotaLimits& limits, const GpuUsage& used,
                        const GpuUsage& asked, const std::string& what) {
  auto over = [&](const char* quantity, int64_t limit, int64_t in_use, int64_t ask,
                  std::string (*text)(int64_t)) {
    const int64_t left = std::max<int64_t>(limit - in_use, 0);
    return "namespace " + ns + ": " + quantity + " quota " + text(limit) + " (ResourceQuota " +
           limits.name + "): " + text(in_use) + " used, " + text(ask) + " asked (" + what + "), " +
           text(left) + " left";
  };
  if (limits.memory_bytes && asked.memory_bytes > 0 &&
      used.memory_bytes + asked.memory_bytes > *limits.memory_bytes) {
    return over("GPU memory", *limits.memory_bytes, used.memory_bytes, asked.memory_bytes,
                BytesText);
  }
  if (limits.cores && asked.cores > 0 && used.cores + asked.cores > *limits.cores) {
    return over("GPU compute", *limits.cores, used.cores, asked.cores, CoresText);
  }
  return "";
}

}  // namespace tessera::scheduler
