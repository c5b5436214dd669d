// A GPU's place on the PCI bus in the forms Kubernetes' standard device attributes take
// (k8s.io/dynamic-resource-allocation/deviceattribute): the bus ID in the kernel's extended BDF
// notation, and the PCIe root complex it hangs off, read from sysfs as the kernel lays it out.
// Pure functions of their arguments and the file system: thread-safe.
//
//   std::string bdf = StandardPciBusId(g.pci_bus_id);  // "00000000:17:00.0" -> "0000:17:00.0"
//   std::string root = PcieRootOf("/sys", bdf);        // "pci0000:00", empty when unknown
#pragma once

#include <string>
#include <string_view>

namespace tessera::node {

// NVML's bus ID ("00000000:17:00.0", an 8-digit domain in upper case) as the standard attribute
// `resource.kubernetes.io/pciBusID` takes it: "dddd:bb:dd.f", lower case. Empty when `nvml_id` is
// not a bus ID or its domain does not fit in four digits.
std::string StandardPciBusId(std::string_view nvml_id);

// The PCIe root complex of the device `bdf` ("0000:17:00.0") as `resource.kubernetes.io/pcieRoot`
// takes it ("pci0000:00"): the first folder under devices/ of the link
// <sysfs_root>/bus/pci/devices/<bdf>, which the kernel points at
// ../../../devices/pci0000:00/0000:00:01.0/0000:17:00.0. Empty when there is no such link or it is
// not laid out so (a virtual machine without the device, a simulated GPU).
std::string PcieRootOf(const std::string& sysfs_root, std::string_view bdf);

}  // namespace tessera::node
