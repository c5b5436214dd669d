#include "device_spec.h"

#include <cctype>
#include <charconv>

#include "common/strings.h"
#include "mig/profiles.h"

namespace simgpu {
namespace {

constexpr size_t kMaxModelLength = 63;

tessera::Result<uint32_t> ParseCount(std::string_view key, std::string_view text, uint32_t min,
                                     uint32_t max) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: " + std::string(key) + "=" +
                                    std::string(text) + " is not a whole number from " +
                                    std::to_string(min) + " to " + std::to_string(max));
  }
  return v;
}

tessera::Status CheckModel(std::string_view model) {
  if (model.empty() || model.size() > kMaxModelLength) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: model name '" + std::string(model) +
                                    "' must have 1 to 63 characters");
  }
  for (char c : model) {
    if (!std::isprint(static_cast<unsigned char>(c)) || c == ':' || c == ',' || c == ';' ||
        c == '"' || c == '\\') {
      return tessera::InvalidArgument(
          "SIMGPU_DEVICES: model name '" + std::string(model) +
          "' may not contain ':', ',', ';', quotes or control characters");
    }
  }
  return tessera::Status::Ok();
}

// A duration item within [min_ns, max_ns]; `range` says that range in words.
tessera::Result<uint64_t> ParseDurationIn(std::string_view key, std::string_view value,
                                          uint64_t min_ns, uint64_t max_ns,
                                          std::string_view range) {
  auto ns = ParseDurationNs(value);
  if (!ns.ok()) return ns.status().WithContext("SIMGPU_DEVICES: " + std::string(key));
  if (*ns < min_ns || *ns > max_ns) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: " + std::string(key) + "=" +
                                    std::string(value) + " is outside " + std::string(range));
  }
  return *ns;
}

// A percent item, "5" or "5%", from 0 to 50.
tessera::Result<uint32_t> ParsePercent(std::string_view key, std::string_view value) {
  std::string_view digits = value.ends_with('%') ? value.substr(0, value.size() - 1) : value;
  auto v = ParseCount(key, digits, 0, 50);
  if (!v.ok()) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: " + std::string(key) + "=" +
                                    std::string(value) + " is not a whole percent from 0 to 50");
  }
  return *v;
}

// One of two words; `first` means true.
tessera::Result<bool> ParseChoice(std::string_view key, std::string_view value,
                                  std::string_view first, std::string_view second,
                                  std::string_view meaning) {
  std::string word = tessera::ToLower(value);
  if (word != first && word != second) {
    return tessera::InvalidArgument(
        "SIMGPU_DEVICES: " + std::string(key) + "=" + std::string(value) + " is neither '" +
        std::string(first) + "' nor '" + std::string(second) + "' (" + std::string(meaning) + ")");
  }
  return word == first;
}

// Lower case without spaces, '-' and '_'.
std::string NameKey(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

// A device of model `name`: a known GPU's NVML name, memory and SMs (those given override them),
// or `name` as it is with `memory` and `sms` (which must then be given).
tessera::Result<DeviceModel> ModelFor(std::string_view name, const uint64_t* memory,
                                      const uint32_t* sms) {
  const KnownGpu* known = FindKnownGpu(name);
  if (known == nullptr) {
    RETURN_IF_ERROR(CheckModel(name));
    return DeviceModel{std::string(name), memory != nullptr ? *memory : 16ull << 30,
                       sms != nullptr ? *sms : 108};
  }
  const tessera::mig::GpuModel* mig = tessera::mig::FindModel(known->mig_key);
  DeviceModel d{mig->name, memory != nullptr ? *memory : known->memory_mib << 20,
                sms != nullptr ? *sms : known->sms};
  // Every MIG profile must fit in the device's memory.
  uint64_t whole = mig->whole().memory_mib << 20;
  if (d.memory_bytes < whole) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: " + mig->name + " needs at least " +
                                    std::to_string(mig->whole().memory_mib) +
                                    "MiB of memory (its " + mig->whole().name +
                                    " MIG profile); leave memory out to get the GPU's " +
                                    std::to_string(known->memory_mib) + "MiB");
  }
  return d;
}

}  // namespace

const std::vector<KnownGpu>& KnownGpus() {
  // Memory as nvidia-smi / NVML report the whole GPU (MiB), SMs of the full chip as shipped.
  static const std::vector<KnownGpu> gpus = {
      {"A100-40GB", "A100-SXM4-40GB", 40960, 108}, {"A100-80GB", "A100-SXM4-80GB", 81920, 108},
      {"H100", "H100-SXM5-80GB", 81559, 132},      {"H100-PCIe", "H100-PCIE-80GB", 81559, 114},
      {"H200", "H200-141GB", 143771, 132},
  };
  return gpus;
}

const KnownGpu* FindKnownGpu(std::string_view name) {
  std::string key = NameKey(tessera::Trim(name));
  if (key.empty()) return nullptr;
  const tessera::mig::GpuModel* mig = tessera::mig::FindModel(name);
  for (const KnownGpu& gpu : KnownGpus()) {
    if (NameKey(gpu.alias) == key) return &gpu;
    if (mig != nullptr && mig == tessera::mig::FindModel(gpu.mig_key)) return &gpu;
  }
  return nullptr;
}

std::string NvmlModeName(NvmlMode mode) {
  switch (mode) {
    case NvmlMode::kOne:
      return "one";
    case NvmlMode::kOwn:
      return "own";
    case NvmlMode::kAligned:
      break;
  }
  return "aligned";
}

namespace {

constexpr const char* kKeys =
    "count, memory, sms, model, gpu, ctxmem, sched, timeslice, jitter, drift, driftperiod, nvml, "
    "nvmlperiod, switch, streams, events, peers, hostslow, profile";

}  // namespace

tessera::Result<uint64_t> ParseSize(std::string_view text) {
  text = tessera::Trim(text);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  std::string unit = tessera::ToLower(text.substr(digits));
  int shift = -1;
  if (unit.empty() || unit == "b") shift = 0;
  if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
  if (digits == 0 || ec != std::errc() || end != text.data() + digits || shift < 0) {
    return tessera::InvalidArgument("size '" + std::string(text) +
                                    "' is not a number with an optional unit B, KiB, MiB, GiB or "
                                    "TiB (K/M/G/T and KB/MB/GB/TB mean the same)");
  }
  if (shift > 0 && number > (UINT64_MAX >> shift)) {
    return tessera::InvalidArgument("size '" + std::string(text) + "' is too large");
  }
  return number << shift;
}

tessera::Result<uint64_t> ParseDurationNs(std::string_view text) {
  text = tessera::Trim(text);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  std::string unit = tessera::ToLower(text.substr(digits));
  uint64_t scale = 0;
  if (unit == "ns") scale = 1;
  if (unit == "us") scale = 1'000;
  if (unit == "ms") scale = 1'000'000;
  if (unit == "s") scale = 1'000'000'000;
  if (digits == 0 || ec != std::errc() || end != text.data() + digits || scale == 0 ||
      number > UINT64_MAX / scale) {
    return tessera::InvalidArgument("duration '" + std::string(text) +
                                    "' is not a number with a unit ns, us, ms or s");
  }
  return number * scale;
}

std::string DeviceSpec::Canonical() const {
  std::string out;
  for (const DeviceModel& d : devices) {
    out +=
        "gpu=" + d.model + ":" + std::to_string(d.memory_bytes) + ":" + std::to_string(d.sms) + ";";
  }
  out += "ctxmem=" + std::to_string(ctx_memory_bytes);
  if (sched == SchedMode::kFifo) {
    out += ";sched=fifo";
  } else {
    out += ";sched=timeslice;timeslice=" + std::to_string(timeslice_ns) + "ns";
  }
  const Imperfections& m = imperfections;
  out += ";jitter=" + std::to_string(m.jitter_percent) +
         ";drift=" + std::to_string(m.drift_percent) +
         ";driftperiod=" + std::to_string(m.drift_period_ns) + "ns" +
         ";nvml=" + NvmlModeName(m.nvml_mode) + ";nvmlperiod=" + std::to_string(m.nvml_period_ns) +
         "ns" + ";switch=" + std::to_string(m.switch_ns) + "ns" +
         ";streams=" + (m.streams_concurrent ? "concurrent" : "serial") +
         ";events=" + (m.events_on_device ? "device" : "host") + ";peers=" + peers.Canonical() +
         ";hostslow=" + std::to_string(host_slowdown);
  return out;
}

tessera::Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  std::string uniform_model = "SimGPU";
  uint64_t uniform_memory = 0;
  uint32_t uniform_sms = 0;
  bool memory_given = false;
  bool sms_given = false;
  uint32_t count = 1;
  bool uniform_keys = false;
  bool timeslice_given = false;
  DeviceSpec spec;
  for (std::string item_text : tessera::Split(text, ';')) {
    for (const std::string& raw : tessera::Split(item_text, ',')) {
      std::string_view item = tessera::Trim(raw);
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return tessera::InvalidArgument("SIMGPU_DEVICES: item '" + std::string(item) +
                                        "' is not KEY=VALUE; keys: " + kKeys);
      }
      std::string key = tessera::ToLower(tessera::Trim(item.substr(0, eq)));
      std::string_view value = tessera::Trim(item.substr(eq + 1));
      if (key == "count") {
        ASSIGN_OR_RETURN(count, ParseCount(key, value, 1, kMaxDevices));
        uniform_keys = true;
      } else if (key == "memory") {
        auto size = ParseSize(value);
        if (!size.ok()) return size.status().WithContext("SIMGPU_DEVICES: memory");
        uniform_memory = *size;
        memory_given = true;
        uniform_keys = true;
      } else if (key == "sms") {
        ASSIGN_OR_RETURN(uniform_sms, ParseCount(key, value, 1, 100000));
        sms_given = true;
        uniform_keys = true;
      } else if (key == "model") {
        if (FindKnownGpu(value) == nullptr) RETURN_IF_ERROR(CheckModel(value));
        uniform_model = std::string(value);
        uniform_keys = true;
      } else if (key == "ctxmem") {
        auto size = ParseSize(value);
        if (!size.ok()) return size.status().WithContext("SIMGPU_DEVICES: ctxmem");
        spec.ctx_memory_bytes = *size;
      } else if (key == "sched") {
        std::string mode = tessera::ToLower(value);
        if (mode != "timeslice" && mode != "fifo") {
          return tessera::InvalidArgument("SIMGPU_DEVICES: sched=" + std::string(value) +
                                          " is neither 'timeslice' (contexts take turns, as on a "
                                          "GPU without MPS) nor 'fifo' (kernels in launch order)");
        }
        spec.sched = mode == "fifo" ? SchedMode::kFifo : SchedMode::kTimeSlice;
      } else if (key == "timeslice") {
        auto ns = ParseDurationNs(value);
        if (!ns.ok()) return ns.status().WithContext("SIMGPU_DEVICES: timeslice");
        if (*ns < 100'000 || *ns > 1'000'000'000) {
          return tessera::InvalidArgument("SIMGPU_DEVICES: timeslice=" + std::string(value) +
                                          " is outside 100us to 1s");
        }
        spec.timeslice_ns = *ns;
        timeslice_given = true;
      } else if (key == "jitter") {
        ASSIGN_OR_RETURN(spec.imperfections.jitter_percent, ParsePercent(key, value));
      } else if (key == "drift") {
        ASSIGN_OR_RETURN(spec.imperfections.drift_percent, ParsePercent(key, value));
      } else if (key == "driftperiod") {
        ASSIGN_OR_RETURN(spec.imperfections.drift_period_ns,
                         ParseDurationIn(key, value, 1'000'000'000, 3'600'000'000'000, "1s to 1h"));
      } else if (key == "nvml") {
        std::string word = tessera::ToLower(value);
        if (word == "one") {
          spec.imperfections.nvml_mode = NvmlMode::kOne;
        } else if (word == "own") {
          spec.imperfections.nvml_mode = NvmlMode::kOwn;
        } else if (word == "aligned") {
          spec.imperfections.nvml_mode = NvmlMode::kAligned;
        } else {
          return tessera::InvalidArgument(
              "SIMGPU_DEVICES: nvml=" + std::string(value) +
              " is none of 'one' (one process per sample instant), 'own' (each process sampled "
              "on its own phase) and 'aligned' (all processes' samples at one period end)");
        }
      } else if (key == "nvmlperiod") {
        ASSIGN_OR_RETURN(spec.imperfections.nvml_period_ns,
                         ParseDurationIn(key, value, 10'000'000, 2'000'000'000, "10ms to 2s"));
      } else if (key == "switch") {
        ASSIGN_OR_RETURN(spec.imperfections.switch_ns,
                         ParseDurationIn(key, value, 0, 10'000'000, "0 to 10ms"));
      } else if (key == "streams") {
        ASSIGN_OR_RETURN(spec.imperfections.streams_concurrent,
                         ParseChoice(key, value, "concurrent", "serial",
                                     "kernels of one context on different streams overlap, or "
                                     "run one at a time"));
      } else if (key == "events") {
        ASSIGN_OR_RETURN(spec.imperfections.events_on_device,
                         ParseChoice(key, value, "device", "host",
                                     "an event on an idle stream stamped when the device runs the "
                                     "context, or at the host's record call"));
      } else if (key == "peers") {
        ASSIGN_OR_RETURN(spec.peers, ParsePeerTopology(value));
      } else if (key == "hostslow") {
        ASSIGN_OR_RETURN(spec.host_slowdown, ParseCount(key, value, 1, 10000));
      } else if (key == "profile") {
        if (tessera::ToLower(value) != "ideal") {
          return tessera::InvalidArgument("SIMGPU_DEVICES: profile=" + std::string(value) +
                                          " is not 'ideal' (the only profile: no jitter, drift, "
                                          "switch cost or stream overlap, aligned NVML samples, "
                                          "events stamped by the host)");
        }
        spec.imperfections = Imperfections::Ideal();
      } else if (key == "gpu") {
        std::vector<std::string> parts = tessera::Split(value, ':', false);
        bool known = !parts.empty() && FindKnownGpu(parts[0]) != nullptr;
        if (parts.size() != 3 && !(known && parts.size() == 1)) {
          return tessera::InvalidArgument("SIMGPU_DEVICES: gpu=" + std::string(value) +
                                          " is not gpu=MODEL:MEMORY:SMS (e.g. "
                                          "gpu=SimGPU-H200:141GiB:132) or gpu=KNOWN (e.g. "
                                          "gpu=H100; known: A100-40GB, A100-80GB, H100, "
                                          "H100-PCIe, H200)");
        }
        uint64_t memory = 0;
        uint32_t sms = 0;
        if (parts.size() == 3) {
          auto size = ParseSize(parts[1]);
          if (!size.ok())
            return size.status().WithContext("SIMGPU_DEVICES: gpu=" + std::string(value));
          memory = *size;
          ASSIGN_OR_RETURN(sms, ParseCount("gpu SMS", parts[2], 1, 100000));
        }
        bool full = parts.size() == 3;
        ASSIGN_OR_RETURN(DeviceModel d,
                         ModelFor(parts[0], full ? &memory : nullptr, full ? &sms : nullptr));
        spec.devices.push_back(d);
      } else {
        return tessera::InvalidArgument("SIMGPU_DEVICES: unknown key '" + key +
                                        "'; keys: " + kKeys);
      }
    }
  }
  if (!spec.devices.empty() && uniform_keys) {
    return tessera::InvalidArgument(
        "SIMGPU_DEVICES: use either gpu=MODEL:MEMORY:SMS items or count/memory/sms/model, not "
        "both");
  }
  if (spec.devices.size() > static_cast<size_t>(kMaxDevices)) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: at most 16 gpu= items are allowed");
  }
  if (timeslice_given && spec.sched == SchedMode::kFifo) {
    return tessera::InvalidArgument(
        "SIMGPU_DEVICES: timeslice= applies to sched=timeslice only, not to sched=fifo");
  }
  if (spec.devices.empty()) {
    ASSIGN_OR_RETURN(DeviceModel uniform,
                     ModelFor(uniform_model, memory_given ? &uniform_memory : nullptr,
                              sms_given ? &uniform_sms : nullptr));
    spec.devices.assign(count, uniform);
  }
  RETURN_IF_ERROR(ValidatePeerTopology(spec.peers, static_cast<int>(spec.devices.size())));
  for (const DeviceModel& d : spec.devices) {
    if (d.memory_bytes < (2ull << 20)) {
      return tessera::InvalidArgument("SIMGPU_DEVICES: device memory must be at least 2MiB");
    }
  }
  return spec;
}

}  // namespace simgpu
