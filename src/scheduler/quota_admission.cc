#include "scheduler/quota_admission.h"

#include "annotations/gpu_config.h"
#include "common/json_text.h"

namespace tessera::scheduler {

using nlohmann::json;

namespace {

std::string Quantity(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "tencent.com/vcuda-memory: 24, tencent.com/vcuda-core: 50": the dialect resources the
// container named `name` gives (limits, or requests where it has no limits of that name).
std::string DialectResources(const json& pod, const std::string& name,
                             const DialectConfig& dialects) {
  const json* spec = Member(pod, "spec");
  std::string out;
  for (const char* list : {"initContainers", "containers"}) {
    const json* containers = spec ? Member(*spec, list) : nullptr;
    if (!containers || !containers->is_array()) continue;
    for (const json& c : *containers) {
      if (TextOf(c, "name") != name) continue;
      const json* resources = Member(c, "resources");
      const json* limits = resources ? Member(*resources, "limits") : nullptr;
      const json* requests = resources ? Member(*resources, "requests") : nullptr;
      for (const std::string& resource : dialects.ResourceNames()) {
        const json* v = limits ? Member(*limits, resource.c_str()) : nullptr;
        if (!v) v = requests ? Member(*requests, resource.c_str()) : nullptr;
        if (v) out += (out.empty() ? "" : ", ") + resource + ": " + Quantity(*v);
      }
      return out;
    }
  }
  return out;
}

std::string PodWhat(const json& pod, const PodRequest& request, const DialectConfig& dialects) {
  std::string out;
  for (const ContainerRequest& c : request.containers) {
    if (!out.empty()) out += "; ";
    out += (c.init ? "init container \"" : "container \"") + c.name + "\": " + c.gpu.dialect + " " +
           DialectResources(pod, c.name, dialects) + " = " + c.gpu.Describe();
  }
  return out;
}

// "request gpu: count 1, memory 8Gi, cores 30" for each request of the driver's class.
std::string ClaimWhat(const json& claim) {
  std::string out = "ResourceClaim";
  const json* metadata = Member(claim, "metadata");
  if (std::string name = metadata ? TextOf(*metadata, "name") : ""; !name.empty()) {
    out += " " + name;
  }
  const json* spec = Member(claim, "spec");
  const json* devices = spec ? Member(*spec, "devices") : nullptr;
  const json* requests = devices ? Member(*devices, "requests") : nullptr;
  if (!requests || !requests->is_array()) return out;
  bool first = true;
  for (const json& r : *requests) {
    const json* exactly = Member(r, "exactly");
    if (!exactly || TextOf(*exactly, "deviceClassName") != annotations::kGpuConfigDriver) continue;
    out += std::string(first ? ": " : "; ") + "request " + TextOf(r, "name") + ":";
    first = false;
    const json* count = Member(*exactly, "count");
    out += " count " + (TextOf(*exactly, "allocationMode") == "All" ? std::string("all")
                        : count                                     ? Quantity(*count)
                                                                    : std::string("1"));
    const json* capacity = Member(*exactly, "capacity");
    const json* asked = capacity ? Member(*capacity, "requests") : nullptr;
    for (const char* key : {"memory", "cores"}) {
      const json* v = asked ? Member(*asked, key) : nullptr;
      out += std::string(", ") + key + " " + (v ? Quantity(*v) : std::string("(default)"));
    }
  }
  return out;
}

}  // namespace

std::string PodQuotaDenial(QuotaLedger& ledger, const std::string& ns, const json& pod,
                           const PodRequest& request, const DialectConfig& dialects, bool record) {
  PodAsk ask = AskOfRequest(request);
  if (ask.empty()) return "";
  return ledger.Admit(ns, QuotaKeyOf(pod), ask, PodWhat(pod, request, dialects), record);
}

std::string ClaimQuotaDenial(QuotaLedger& ledger, const std::string& ns, const json& claim,
                             bool record) {
  const json* spec = Member(claim, "spec");
  if (!spec) return "";
  Result<GpuAsk> asked = AskOfClaimSpec(*spec, ledger.MaxGpusPerNode());
  if (!asked.ok()) return asked.status().message();
  PodAsk ask{.app = *asked};
  if (ask.empty()) return "";
  return ledger.Admit(ns, QuotaKeyOf(claim), ask, ClaimWhat(claim), record);
}

}  // namespace tessera::scheduler
