// The ResourceSlice's content against the rules of the pinned API server's validation
// (kubernetes v1.36.3 pkg/apis/resource/validation/validation.go), one test per rule relied on.
#include "node/dra/slice_content.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace tessera::node {
namespace {

using nlohmann::json;

// IsDNS1123Label / IsDNS1123Subdomain.
bool IsDnsLabel(const std::string& s) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, kLabel);
}
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsDnsLabel(s.substr(start, dot - start))) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}
// validateQualifiedName: a C identifier of at most DeviceMaxIDLength (32) characters, after an
// optional domain and a slash.
bool IsAttributeName(const std::string& s) {
  static const std::regex kC("[A-Za-z_][A-Za-z0-9_]*");
  size_t slash = s.find('/');
  std::string id = slash == std::string::npos ? s : s.substr(slash + 1);
  if (slash != std::string::npos) {
    std::string domain = s.substr(0, slash);  // at most DeviceMaxDomainLength (63)
    if (domain.size() > 63 || !IsDnsSubdomain(domain)) return false;
  }
  return id.size() <= 32 && std::regex_match(id, kC);
}

// Bytes from the quantities BytesQuantity writes (a whole number with an optional binary suffix).
uint64_t Bytes(const std::string& quantity) {
  static const std::map<std::string, int> kShift = {{"", 0},    {"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                    {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  size_t digits = quantity.find_first_not_of("0123456789");
  std::string suffix = digits == std::string::npos ? "" : quantity.substr(digits);
  EXPECT_TRUE(kShift.contains(suffix)) << quantity;
  return std::stoull(quantity.substr(0, digits)) << kShift.at(suffix);
}

GpuInfo Gpu(int index, uint64_t memory_mib, bool healthy = true) {
  return {.uuid = "GPU-" + std::to_string(index) + "0000000-1111-2222-3333-444444444444",
          .index = index,
          .model = "NVIDIA H200",
          .memory_mib = memory_mib,
          .sms = 132,
          .pci_bus_id = "00000000:17:00.0",
          .pcie_root = "pci0000:00",
          .numa = 0,
          .compute_capability = "9.0",
          .driver_version = "580.65.06",
          .device_path = "/dev/nvidia" + std::to_string(index),
          .healthy = healthy};
}

const SliceOwner kOwner{"node-1", "7f6c3a52-9f1e-4c1b-8a53-1f0e2d3c4b5a"};

TEST(SliceContentTest, SliceNameIsTheNodeAndDriverAndAValidObjectName) {
  EXPECT_EQ(ResourceSliceName("node-1"), "node-1-gpu.tessera.io");
  EXPECT_EQ(ResourceSliceName("gpu-7.zone-a.example.com"),
            "gpu-7.zone-a.example.com-gpu.tessera.io");
  EXPECT_TRUE(IsDnsSubdomain(ResourceSliceName("node-1")));
}

// metadata.name is a DNS subdomain (NameIsDNSSubdomain): at most 253 characters, labels at most
// 63. A node name may be 253 characters long, or end in a label that "-gpu" would lengthen past
// 63; those names get the hashed form, still different per node.
TEST(SliceContentTest, SliceNameOfALongNodeNameStaysAValidNameAndDistinct) {
  const std::string label62(62, 'a');
  const std::string long_node = label62 + "." + label62 + "." + label62 + "." + label62;  // 251
  const std::string long_last_label = "n." + std::string(61, 'b');
  std::set<std::string> names;
  for (const std::string& node :
       {long_node, long_node.substr(0, 249) + "cd", long_last_label, long_last_label + "c"}) {
    std::string name = ResourceSliceName(node);
    EXPECT_TRUE(IsDnsSubdomain(name)) << name << " (" << name.size() << " characters)";
    EXPECT_TRUE(name.ends_with("-gpu.tessera.io")) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(ResourceSliceName(long_node).substr(0, 100), long_node.substr(0, 100));
  // A truncation (to 221 characters) that would end on a dash or a dot leaves no dangling label.
  const std::string three_labels =
      std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + ".";
  for (char at_cut : {'-', '.'}) {
    std::string node = three_labels + std::string(28, 'd') + at_cut + std::string(30, 'e');
    ASSERT_EQ(node[220], at_cut);
    std::string name = ResourceSliceName(node);
    EXPECT_TRUE(IsDnsSubdomain(name)) << name;
  }
}

// Device names are DNS labels (validateDeviceName = ValidateDNS1123Label).
TEST(SliceContentTest, DeviceNamesAreDnsLabels) {
  EXPECT_EQ(DraDeviceName(0), "gpu-0");
  EXPECT_TRUE(IsDnsLabel(DraDeviceName(15)));
  json devices = SliceDevices({Gpu(0, 81920), Gpu(3, 81920)});
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]["name"], "gpu-0");
  EXPECT_EQ(devices[1]["name"], "gpu-3");
}

// Quantities are written as the server writes them back (canonical), so a stored slice compares
// equal to the one we would write.
TEST(SliceContentTest, ByteQuantitiesAreCanonical) {
  EXPECT_EQ(BytesQuantity(0), "0");
  EXPECT_EQ(BytesQuantity(1023), "1023");
  EXPECT_EQ(BytesQuantity(1024), "1Ki");
  EXPECT_EQ(BytesQuantity(1536), "1536");
  EXPECT_EQ(BytesQuantity(256ull << 20), "256Mi");
  EXPECT_EQ(BytesQuantity(81920ull << 20), "80Gi");
  EXPECT_EQ(BytesQuantity(143771ull << 20), "143771Mi");
  EXPECT_EQ(BytesQuantity(3ull << 60), "3Ei");
}

// validateRequestPolicyRange on `memory`: min <= value, default >= min, min + step <= value,
// (default - min) a multiple of step; and the default is the whole memory in whole steps.
TEST(SliceContentTest, MemoryRequestPolicyIsValidForEveryMemorySize) {
  for (uint64_t mib : {512ull, 513ull, 767ull, 1000ull, 24576ull, 81559ull, 143771ull, 196608ull}) {
    json devices = SliceDevices({Gpu(0, mib)});
    ASSERT_EQ(devices.size(), 1u) << mib;
    const json& memory = devices[0]["capacity"]["memory"];
    const uint64_t value = Bytes(memory["value"].get<std::string>());
    const json& policy = memory["requestPolicy"];
    const uint64_t def = Bytes(policy["default"].get<std::string>());
    const uint64_t min = Bytes(policy["validRange"]["min"].get<std::string>());
    const uint64_t step = Bytes(policy["validRange"]["step"].get<std::string>());
    EXPECT_EQ(value, mib << 20);
    EXPECT_EQ(min, 256ull << 20);
    EXPECT_EQ(step, 256ull << 20);
    EXPECT_FALSE(policy["validRange"].contains("max")) << "the capacity value bounds requests";
    EXPECT_FALSE(policy.contains("validValues")) << "one policy only";
    EXPECT_LE(min, value) << mib;
    EXPECT_GE(def, min) << mib;
    EXPECT_LE(min + step, value) << mib;
    EXPECT_EQ((def - min) % step, 0u) << mib;
    EXPECT_LE(def, value) << mib;
    EXPECT_GT(def + step, value) << mib << ": the default leaves less than a step unclaimed";
  }
}

// Issue 33: with node.device-memory-scaling the capacity claims consume is the virtual memory
// (physical x scaling, its request policy valid for that size); the attributes keep the physical
// MiB and say the scaling, so a CEL selector can tell the two apart.
TEST(SliceContentTest, ScaledMemoryIsTheCapacityAndTheAttributesSayThePhysicalAndTheScaling) {
  GpuInfo doubled = Gpu(0, 24268);
  doubled.memory_scaling = 2;
  GpuInfo fraction = Gpu(1, 143771);
  fraction.memory_scaling = 1.5;  // 215656.5 MiB, rounded down
  GpuInfo plain = Gpu(2, 24268);
  json devices = SliceDevices({doubled, fraction, plain});
  ASSERT_EQ(devices.size(), 3u);
  const json& memory = devices[0]["capacity"]["memory"];
  EXPECT_EQ(memory["value"], "48536Mi");
  EXPECT_EQ(memory["requestPolicy"]["default"], BytesQuantity(48384ull << 20))
      << "the whole virtual memory in 256 MiB steps";
  EXPECT_EQ(devices[0]["attributes"]["memory"], json({{"int", 24268}}));
  EXPECT_EQ(devices[0]["attributes"]["memoryScaling"], json({{"string", "2"}}));
  EXPECT_EQ(devices[1]["capacity"]["memory"]["value"], "215656Mi");
  EXPECT_EQ(devices[1]["attributes"]["memory"], json({{"int", 143771}}));
  EXPECT_EQ(devices[1]["attributes"]["memoryScaling"], json({{"string", "1.5"}}));
  EXPECT_EQ(devices[2]["capacity"]["memory"]["value"], "24268Mi");
  EXPECT_EQ(devices[2]["attributes"]["memoryScaling"], json({{"string", "1"}}));
  // A GPU too small for two steps alone is published once its virtual memory has them.
  GpuInfo small = Gpu(3, 300);
  EXPECT_TRUE(SliceDevices({small}).empty());
  small.memory_scaling = 2;
  EXPECT_EQ(SliceDevices({small}).size(), 1u);
}

// min + step must not exceed the value: a GPU with less than 512 MiB cannot be published.
TEST(SliceContentTest, GpuTooSmallForTwoMemoryStepsIsLeftOut) {
  json devices = SliceDevices({Gpu(0, 511), Gpu(1, 256), Gpu(2, 512)});
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]["name"], "gpu-2");
}

// Issue 34: a GPU in MIG mode is no CUDA device; the slice has no MIG devices, so it is left out.
TEST(SliceContentTest, GpuInMigModeIsLeftOut) {
  GpuInfo mig = Gpu(0, 81920);
  mig.mig.capable = mig.mig.enabled = true;
  GpuInfo capable = Gpu(1, 81920);
  capable.mig.capable = true;  // MIG possible, not on: an ordinary GPU
  json devices = SliceDevices({mig, capable});
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]["name"], "gpu-1");
}

// The same rules on `cores`, which also has a max: min <= default <= max <= value, max and default
// min plus whole steps.
TEST(SliceContentTest, CoresRequestPolicyIsValid) {
  const json devices = SliceDevices({Gpu(0, 81920)});
  const json& cores = devices[0]["capacity"]["cores"];
  EXPECT_EQ(cores["value"], "100");
  const json& policy = cores["requestPolicy"];
  EXPECT_EQ(policy["default"], "0");
  EXPECT_EQ(policy["validRange"], json({{"min", "0"}, {"max", "100"}, {"step", "1"}}));
}

// A requestPolicy is only allowed with allowMultipleAllocations (validateSingleAllocatable...).
TEST(SliceContentTest, EveryDeviceAllowsMultipleAllocations) {
  for (const json& d : SliceDevices({Gpu(0, 81920), Gpu(1, 24576)})) {
    EXPECT_EQ(d["allowMultipleAllocations"], true);
    for (const auto& [name, capacity] : d["capacity"].items()) {
      EXPECT_TRUE(capacity.contains("requestPolicy")) << name;
    }
  }
}

// Attribute and capacity names are C identifiers of at most 32 characters, the driver's own or
// qualified by a domain (validateQualifiedName), at most 32 of them together, each attribute
// exactly one typed value, string values at most 64 characters.
TEST(SliceContentTest, AttributesFollowTheNameValueAndCountRules) {
  json d = SliceDevices({Gpu(2, 143771)})[0];
  const json& a = d["attributes"];
  EXPECT_EQ(a["uuid"], json({{"string", Gpu(2, 1).uuid}}));
  EXPECT_EQ(a["index"], json({{"int", 2}}));
  EXPECT_EQ(a["model"], json({{"string", "NVIDIA H200"}}));
  EXPECT_EQ(a["memory"], json({{"int", 143771}}));
  EXPECT_EQ(a["sms"], json({{"int", 132}}));
  EXPECT_EQ(a["pciBusID"], json({{"string", "00000000:17:00.0"}}));
  EXPECT_EQ(a["numaNode"], json({{"int", 0}}));
  EXPECT_EQ(a["computeCapability"], json({{"version", "9.0.0"}}));
  EXPECT_EQ(a["driverVersion"], json({{"version", "580.65.6"}}));
  EXPECT_EQ(a["resource.kubernetes.io/pciBusID"], json({{"string", "0000:17:00.0"}}));
  EXPECT_EQ(a["resource.kubernetes.io/pcieRoot"], json({{"string", "pci0000:00"}}));
  EXPECT_EQ(a["resource.kubernetes.io/numaNode"], json({{"int", 0}}));
  EXPECT_LE(a.size() + d["capacity"].size(), 32u);
  for (const json& map : {a, d["capacity"]}) {
    for (const auto& [name, value] : map.items()) EXPECT_TRUE(IsAttributeName(name)) << name;
  }
  const std::set<std::string> kTypes = {"int", "bool", "string", "version"};
  for (const auto& [name, value] : a.items()) {
    ASSERT_EQ(value.size(), 1u) << name;
    EXPECT_TRUE(kTypes.contains(value.begin().key())) << name;
    if (value.contains("string")) {
      EXPECT_LE(value["string"].get<std::string>().size(), 64u);
    }
    if (value.contains("version")) {
      // semver.Parse (blang/semver): MAJOR.MINOR.PATCH, no leading zeros.
      static const std::regex kSemver("(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)");
      EXPECT_TRUE(std::regex_match(value["version"].get<std::string>(), kSemver)) << name;
    }
  }
}

// What the node does not know is not published; a string too long to publish is left out (the
// device stays).
TEST(SliceContentTest, UnknownAndTooLongAttributesAreLeftOut) {
  GpuInfo g = Gpu(0, 81920);
  g.numa = -1;
  g.sms = 0;
  g.pci_bus_id = "";
  g.pcie_root = "";
  g.model = std::string(65, 'M');
  g.compute_capability = "";
  g.driver_version = "r580 beta";
  json a = SliceDevices({g})[0]["attributes"];
  for (const char* name : {"numaNode", "sms", "pciBusID", "model", "computeCapability",
                           "driverVersion", "resource.kubernetes.io/pciBusID",
                           "resource.kubernetes.io/pcieRoot", "resource.kubernetes.io/numaNode"}) {
    EXPECT_FALSE(a.contains(name)) << name;
  }
  EXPECT_TRUE(a.contains("uuid"));
  g.model = std::string(64, 'M');
  EXPECT_TRUE(SliceDevices({g})[0]["attributes"].contains("model"));
}

// A bus ID that is not one (a driver that answers something else) publishes no standard one; the
// driver's own attribute keeps what NVML said.
TEST(SliceContentTest, ABusIdNotInTheStandardFormIsNotPublishedAsOne) {
  GpuInfo g = Gpu(0, 81920);
  g.pci_bus_id = "00010000:17:00.0";  // a domain over four digits
  json a = SliceDevices({g})[0]["attributes"];
  EXPECT_FALSE(a.contains("resource.kubernetes.io/pciBusID"));
  EXPECT_EQ(a["pciBusID"], json({{"string", "00010000:17:00.0"}}));
}

TEST(SliceContentTest, DottedVersionsBecomeSemanticVersions) {
  EXPECT_EQ(SemanticVersion("9.0"), "9.0.0");
  EXPECT_EQ(SemanticVersion("580.65.06"), "580.65.6");
  EXPECT_EQ(SemanticVersion("535.104.05"), "535.104.5");
  EXPECT_EQ(SemanticVersion("560"), "560.0.0");
  EXPECT_EQ(SemanticVersion("10.00.0"), "10.0.0");
  for (const char* bad : {"", "9.", ".9", "9..0", "1.2.3.4", "v9.0", "9.0-beta", "9.x"}) {
    EXPECT_EQ(SemanticVersion(bad), "") << bad;
  }
}

// An unhealthy GPU stays in the slice with a taint, whose effect the setting chooses: the
// scheduler gives it to no new claim (NoSchedule), also evicts its pods (NoExecute), or only shows
// it (None); a claim that tolerates the taint may still be allocated it.
TEST(SliceContentTest, UnhealthyGpusAreTainted) {
  json devices = SliceDevices({Gpu(0, 81920), Gpu(1, 81920, false), Gpu(2, 81920)});
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_FALSE(devices[0].contains("taints"));
  EXPECT_EQ(devices[1]["name"], "gpu-1");
  EXPECT_EQ(devices[1]["taints"],
            json::parse(R"([{"key":"gpu.tessera.io/unhealthy","effect":"NoSchedule"}])"));
  EXPECT_EQ(devices[1]["capacity"], devices[0]["capacity"]);
  EXPECT_FALSE(devices[2].contains("taints"));
  for (const char* effect : {"NoExecute", "None"}) {
    json d = SliceDevices({Gpu(0, 81920, false)}, effect);
    EXPECT_EQ(d[0]["taints"][0]["effect"], effect);
  }
}

// ResourceSliceMaxDevices: at most 128 devices in a slice.
TEST(SliceContentTest, AtMost128DevicesPerSlice) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 130; ++i) gpus.push_back(Gpu(i, 1024));
  json devices = SliceDevices(gpus);
  ASSERT_EQ(devices.size(), 128u);
  EXPECT_EQ(devices[127]["name"], "gpu-127");
}

// Exactly one of nodeName/nodeSelector/allNodes/perDeviceNodeSelection; pool name a DNS subdomain
// (the node's name), resourceSliceCount > 0, generation >= 0; the driver a DNS subdomain of at
// most 63 characters; an ownerReference with the Node's uid.
TEST(SliceContentTest, SliceObjectHasOneNodeFieldAPoolAndItsOwner) {
  json devices = SliceDevices({Gpu(0, 81920)});
  json slice = ResourceSliceObject(kOwner, devices, 4);
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["kind"], "ResourceSlice");
  EXPECT_EQ(slice["metadata"]["name"], "node-1-gpu.tessera.io");
  const json& spec = slice["spec"];
  EXPECT_EQ(spec["driver"], "gpu.tessera.io");
  EXPECT_TRUE(IsDnsSubdomain(spec["driver"].get<std::string>()));
  EXPECT_EQ(spec["nodeName"], "node-1");
  for (const char* other : {"nodeSelector", "allNodes", "perDeviceNodeSelection"}) {
    EXPECT_FALSE(spec.contains(other)) << other;
  }
  EXPECT_EQ(spec["pool"], json({{"name", "node-1"}, {"generation", 4}, {"resourceSliceCount", 1}}));
  EXPECT_EQ(spec["devices"], devices);
  EXPECT_EQ(slice["metadata"]["ownerReferences"], json::array({{{"apiVersion", "v1"},
                                                                {"kind", "Node"},
                                                                {"name", "node-1"},
                                                                {"uid", kOwner.node_uid},
                                                                {"controller", true}}}));
  // No devices: the field is left out, as the server stores it (omitempty).
  EXPECT_FALSE(ResourceSliceObject(kOwner, json::array(), 1)["spec"].contains("devices"));
}

TEST(SliceContentTest, MatchIgnoresServerFieldsAndGenerationButNotContent) {
  json desired = ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920), Gpu(1, 81920)}), 3);
  json stored = desired;
  stored["metadata"]["uid"] = "0d9c";
  stored["metadata"]["resourceVersion"] = "42";
  stored["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = false;
  stored["spec"]["pool"]["generation"] = 2;
  stored["spec"]["devices"][0]["bindsToNode"] = false;
  EXPECT_TRUE(SliceMatches(stored, desired));

  json one_device = ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920)}), 3);
  EXPECT_FALSE(SliceMatches(stored, one_device));
  EXPECT_FALSE(SliceMatches(one_device, desired));
  json other_memory = ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920), Gpu(1, 40960)}), 3);
  EXPECT_FALSE(SliceMatches(stored, other_memory));
  json other_owner = desired;
  other_owner["metadata"]["ownerReferences"][0]["uid"] = "another-node-incarnation";
  EXPECT_FALSE(SliceMatches(stored, other_owner));
  json none = ResourceSliceObject(kOwner, json::array(), 3);
  EXPECT_FALSE(SliceMatches(stored, none));
  EXPECT_TRUE(SliceMatches(none, none));

  // A taint: the server stamps its timeAdded; once the GPU is healthy again, the stored taint is
  // a difference.
  json tainted = ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920, false)}), 3);
  json tainted_stored = tainted;
  tainted_stored["spec"]["devices"][0]["taints"][0]["timeAdded"] = "2026-12-05T16:00:00Z";
  EXPECT_TRUE(SliceMatches(tainted_stored, tainted));
  EXPECT_FALSE(
      SliceMatches(tainted_stored, ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920)}), 3)));
  EXPECT_FALSE(
      SliceMatches(ResourceSliceObject(kOwner, SliceDevices({Gpu(0, 81920)}), 3), tainted));
}

}  // namespace
}  // namespace tessera::node
