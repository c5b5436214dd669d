#include "node/dra/slice_content.h"

#include <cstdio>

#include "annotations/inventory.h"
#include "common/strings.h"
#include "log/log.h"
#include "node/gpu/pci_address.h"

namespace tessera::node {
namespace {

using nlohmann::json;

constexpr size_t kMaxObjectName = 253;  // a DNS subdomain
constexpr size_t kMaxLabel = 63;        // each of its dot-separated labels
constexpr std::string_view kNameSuffix = "-gpu.tessera.io";

bool LabelsFit(std::string_view name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    if (dot - start > kMaxLabel) return false;
    start = dot + 1;
  }
  return true;
}

// A string attribute, or nothing (with a warning) when the value is empty or too long to publish.
void AddString(json& attributes, const char* name, const std::string& value, int index) {
  if (value.empty()) return;
  if (value.size() > kMaxAttributeValueLength) {
    log::Warn("GPU attribute too long for a ResourceSlice; left out",
              {{"gpu", std::to_string(index)},
               {"attribute", name},
               {"length", std::to_string(value.size())},
               {"max", std::to_string(kMaxAttributeValueLength)}});
    return;
  }
  attributes[name] = {{"string", value}};
}

// A version attribute, or nothing (with a warning when there was a value) when `dotted` is not a
// version.
void AddVersion(json& attributes, const char* name, const std::string& dotted, int index) {
  if (dotted.empty()) return;
  std::string version = SemanticVersion(dotted);
  if (version.empty() || version.size() > kMaxAttributeValueLength) {
    log::Warn("GPU attribute is not a version a ResourceSlice takes; left out",
              {{"gpu", std::to_string(index)}, {"attribute", name}, {"value", dotted}});
    return;
  }
  attributes[name] = {{"version", version}};
}

json Attributes(const GpuInfo& g) {
  json a = json::object();
  AddString(a, "uuid", g.uuid, g.index);
  a["index"] = {{"int", g.index}};
  AddString(a, "model", g.model, g.index);
  a["memory"] = {{"int", g.memory_mib}};  // physical; the capacity is the virtual memory
  a["memoryScaling"] = {{"string", annotations::MemoryScalingText(g.memory_scaling)}};
  if (g.sms > 0) a["sms"] = {{"int", g.sms}};
  AddString(a, "pciBusID", g.pci_bus_id, g.index);
  if (g.numa >= 0) a["numaNode"] = {{"int", g.numa}};
  AddVersion(a, "computeCapability", g.compute_capability, g.index);
  AddVersion(a, "driverVersion", g.driver_version, g.index);
  // Kubernetes' standard attributes (deviceattribute, KEP-4381 and KEP-6072): other drivers'
  // devices publish the same names, so a claim can ask for a GPU and a NIC on one root complex or
  // NUMA node (matchAttribute). NUMA in the scalar form: the list form needs DRAListTypeAttributes
  // (1.37).
  AddString(a, "resource.kubernetes.io/pciBusID", StandardPciBusId(g.pci_bus_id), g.index);
  AddString(a, "resource.kubernetes.io/pcieRoot", g.pcie_root, g.index);
  if (g.numa >= 0) a["resource.kubernetes.io/numaNode"] = {{"int", g.numa}};
  return a;
}

// Validation (validateRequestPolicyRange) wants: min <= default, min + step <= value, and default
// and max each min plus a whole number of steps.
json Capacity(uint64_t memory_bytes) {
  const uint64_t whole_steps = memory_bytes / kMemoryStepBytes * kMemoryStepBytes;
  return {{"memory",
           {{"value", BytesQuantity(memory_bytes)},
            {"requestPolicy",
             {{"default", BytesQuantity(whole_steps)},
              {"validRange",
               {{"min", BytesQuantity(kMemoryStepBytes)},
                {"step", BytesQuantity(kMemoryStepBytes)}}}}}}},
          {"cores",
           {{"value", "100"},
            {"requestPolicy",
             {{"default", "0"}, {"validRange", {{"min", "0"}, {"max", "100"}, {"step", "1"}}}}}}}};
}

bool Contains(const json& stored, const json& desired) {
  if (desired.is_object()) {
    if (!stored.is_object()) return false;
    for (const auto& [key, value] : desired.items()) {
      auto it = stored.find(key);
      if (it == stored.end() || !Contains(*it, value)) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    if (!stored.is_array() || stored.size() != desired.size()) return false;
    for (size_t i = 0; i < desired.size(); ++i) {
      if (!Contains(stored[i], desired[i])) return false;
    }
    return true;
  }
  return stored == desired;
}

}  // namespace

std::string SemanticVersion(std::string_view dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string_view part = dotted.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string_view::npos) return "";
    size_t first = part.find_first_not_of('0');
    parts.emplace_back(first == std::string_view::npos ? "0" : part.substr(first));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() > 3) return "";
  while (parts.size() < 3) parts.emplace_back("0");
  return parts[0] + "." + parts[1] + "." + parts[2];
}

std::string DraDeviceName(int index) {
  return "gpu-" + std::to_string(index);
}

std::string ResourceSliceName(std::string_view node_name) {
  std::string plain = std::string(node_name) + std::string(kNameSuffix);
  if (plain.size() <= kMaxObjectName && LabelsFit(plain)) return plain;
  // "<node's first characters>.<hash>-gpu.tessera.io": the hash gets a label of its own, so the
  // node's last label is not lengthened past 63 characters.
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(Fnv1a(node_name)));
  const size_t keep = kMaxObjectName - 1 - 16 - kNameSuffix.size();
  std::string prefix(node_name.substr(0, keep));
  while (!prefix.empty() && (prefix.back() == '.' || prefix.back() == '-')) prefix.pop_back();
  return (prefix.empty() ? "" : prefix + ".") + hash + std::string(kNameSuffix);
}

std::string BytesQuantity(uint64_t bytes) {
  static constexpr const char* kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes < 1024) return std::to_string(bytes);
  int suffix = 0;
  while (suffix < 6 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++suffix;
  }
  return std::to_string(bytes) + kSuffixes[suffix];
}

json SliceDevices(const std::vector<GpuInfo>& gpus, std::string_view unhealthy_effect) {
  json devices = json::array();
  for (const GpuInfo& g : gpus) {
    const uint64_t memory_bytes = g.virtual_memory_mib() << 20;
    if (memory_bytes < 2 * kMemoryStepBytes) {
      log::Warn("GPU left out of the ResourceSlice: its memory is less than two 256 MiB steps",
                {{"gpu", std::to_string(g.index)},
                 {"memoryMiB", std::to_string(g.virtual_memory_mib())}});
      continue;
    }
    if (g.mig.enabled) {
      // In MIG mode the GPU is no CUDA device, and the slice has no MIG devices yet.
      log::Info("GPU in MIG mode left out of the ResourceSlice: DRA publishes no MIG devices",
                {{"gpu", std::to_string(g.index)}});
      continue;
    }
    if (devices.size() == kMaxDevicesPerSlice) {
      log::Error("more GPUs than one ResourceSlice may hold; the rest are not published",
                 {{"max", std::to_string(kMaxDevicesPerSlice)},
                  {"first-left-out", std::to_string(g.index)}});
      break;
    }
    json device = {{"name", DraDeviceName(g.index)},
                   {"allowMultipleAllocations", true},
                   {"attributes", Attributes(g)},
                   {"capacity", Capacity(memory_bytes)}};
    // The server stamps timeAdded; SliceMatches ignores fields it adds.
    if (!g.healthy) {
      device["taints"] =
          json::array({{{"key", kUnhealthyTaintKey}, {"effect", std::string(unhealthy_effect)}}});
    }
    devices.push_back(std::move(device));
  }
  return devices;
}

json ResourceSliceObject(const SliceOwner& owner, const json& devices, int64_t pool_generation) {
  json spec = {
      {"driver", kDraDriverName},
      {"nodeName", owner.node_name},
      {"pool",
       {{"name", owner.node_name}, {"generation", pool_generation}, {"resourceSliceCount", 1}}}};
  if (!devices.empty()) spec["devices"] = devices;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata",
           {{"name", ResourceSliceName(owner.node_name)},
            {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", owner.node_name},
                                              {"uid", owner.node_uid},
                                              {"controller", true}}})}}},
          {"spec", spec}};
}

bool SliceMatches(const json& stored, const json& desired) {
  json want_spec = desired.value("spec", json::object());
  json have_spec = stored.value("spec", json::object());
  if (want_spec.contains("pool")) want_spec["pool"].erase("generation");
  // Devices must match exactly in number: a stored device we no longer publish is a difference.
  if (have_spec.value("devices", json::array()).size() !=
      want_spec.value("devices", json::array()).size()) {
    return false;
  }
  // A taint we no longer publish (the GPU is healthy again) is a difference too: Contains only
  // asks that what we publish be there.
  const json& have_devices = have_spec.value("devices", json::array());
  const json& want_devices = want_spec.value("devices", json::array());
  for (size_t i = 0; i < want_devices.size(); ++i) {
    if (!want_devices[i].contains("taints") &&
        !have_devices[i].value("taints", json::array()).empty()) {
      return false;
    }
  }
  auto owners = [](const json& object) {
    json metadata = object.value("metadata", json::object());
    return metadata.value("ownerReferences", json::array());
  };
  return Contains(have_spec, want_spec) && Contains(owners(stored), owners(desired));
}

}  // namespace tessera::node
