#include "node/gpu/nvml_gpu_source.h"

#include "node/gpu/pci_address.h"
#include "node/mig/mig_discovery.h"

namespace tessera::node {

Result<std::vector<GpuInfo>> NvmlGpuSource::Discover() {
  unsigned int count = 0;
  RETURN_IF_ERROR(nvml_.Check(nvml_.DeviceGetCount(&count), "nvmlDeviceGetCount_v2"));
  std::vector<GpuInfo> out;
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvml_.SystemGetDriverVersion &&
      nvml_.SystemGetDriverVersion(driver, sizeof(driver)) != NVML_SUCCESS) {
    driver[0] = '\0';
  }
  // No table (no MIG in the driver, or not readable): MIG devices without capability nodes.
  Result<MigMinors> read = ReadMigMinors(mig_.minors_file);
  const MigMinors minors = read.ok() ? *read : MigMinors{};
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    RETURN_IF_ERROR(
        nvml_.Check(nvml_.DeviceGetHandleByIndex(i, &dev), "nvmlDeviceGetHandleByIndex_v2"));
    GpuInfo g;
    g.index = static_cast<int>(i);
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    RETURN_IF_ERROR(nvml_.Check(nvml_.DeviceGetUUID(dev, buf, sizeof(buf)), "nvmlDeviceGetUUID"));
    g.uuid = buf;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    RETURN_IF_ERROR(nvml_.Check(nvml_.DeviceGetName(dev, name, sizeof(name)), "nvmlDeviceGetName"));
    g.model = name;
    nvmlMemory_t mem{};
    RETURN_IF_ERROR(nvml_.Check(nvml_.DeviceGetMemoryInfo(dev, &mem), "nvmlDeviceGetMemoryInfo"));
    g.memory_mib = mem.total / (1024 * 1024);
    nvmlDeviceAttributes_t attrs{};
    if (nvml_.DeviceGetAttributes && nvml_.DeviceGetAttributes(dev, &attrs) == NVML_SUCCESS) {
      g.sms = static_cast<int>(attrs.multiprocessorCount);
    }
    nvmlPciInfo_t pci{};
    if (nvml_.DeviceGetPciInfo && nvml_.DeviceGetPciInfo(dev, &pci) == NVML_SUCCESS) {
      g.pci_bus_id = pci.busId;
      g.pcie_root = PcieRootOf(sysfs_root_, StandardPciBusId(g.pci_bus_id));
    }
    unsigned int numa = 0;
    if (nvml_.DeviceGetNumaNodeId && nvml_.DeviceGetNumaNodeId(dev, &numa) == NVML_SUCCESS) {
      g.numa = static_cast<int>(numa);
    }
    int cc_major = 0, cc_minor = 0;
    if (nvml_.DeviceGetCudaComputeCapability &&
        nvml_.DeviceGetCudaComputeCapability(dev, &cc_major, &cc_minor) == NVML_SUCCESS) {
      g.compute_capability = std::to_string(cc_major) + "." + std::to_string(cc_minor);
    }
    g.driver_version = driver;
    unsigned int minor = i;
    if (nvml_.DeviceGetMinorNumber) nvml_.DeviceGetMinorNumber(dev, &minor);
    g.device_path = "/dev/nvidia" + std::to_string(minor);
    ASSIGN_OR_RETURN(g.mig, DiscoverMig(nvml_, dev, static_cast<int>(minor), minors));
    g.mig.mode = mig_.For(g).mode;
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tessera::node
