// A GPU's PCI address in the standard attributes' forms (node/gpu/pci_address.h).
#include "node/gpu/pci_address.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

namespace fs = std::filesystem;

TEST(StandardPciBusIdTest, NvmlsEightDigitDomainBecomesTheKernelsFour) {
  EXPECT_EQ(StandardPciBusId("00000000:17:00.0"), "0000:17:00.0");
  EXPECT_EQ(StandardPciBusId("00000000:1A:00.0"), "0000:1a:00.0");
  EXPECT_EQ(StandardPciBusId("0000:3b:00.1"), "0000:3b:00.1");
  EXPECT_EQ(StandardPciBusId("0000ABCD:c1:1f.7"), "abcd:c1:1f.7");
}

TEST(StandardPciBusIdTest, WhatIsNotABusIdGivesNothing) {
  for (const char* id :
       {"", "00000000", "00010000:17:00.0", "000:17:00.0", "00000000:17:00", "00000000:17-00.0",
        "00000000:1G:00.0", "00000000:17:00.0 ", "000000000:17:00.0"}) {
    EXPECT_EQ(StandardPciBusId(id), "") << id;
  }
}

// A sysfs tree laid out as the kernel lays it out, under a folder of the test's own.
class PcieRootTest : public ::testing::Test {
 protected:
  PcieRootTest() : root_(fs::path(::testing::TempDir()) / ("sysfs-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_ / "bus/pci/devices");
    fs::create_directories(root_ / "devices/pci0000:16/0000:16:01.0/0000:17:00.0");
  }
  ~PcieRootTest() override { fs::remove_all(root_); }

  void Link(const std::string& bdf, const std::string& target) {
    fs::create_symlink(target, root_ / "bus/pci/devices" / bdf);
  }

  fs::path root_;
};

TEST_F(PcieRootTest, TheFirstFolderUnderDevicesIsTheRootComplex) {
  Link("0000:17:00.0", "../../../devices/pci0000:16/0000:16:01.0/0000:17:00.0");
  EXPECT_EQ(PcieRootOf(root_.string(), "0000:17:00.0"), "pci0000:16");
}

TEST_F(PcieRootTest, NoLinkOrALinkNotLaidOutSoGivesNothing) {
  EXPECT_EQ(PcieRootOf(root_.string(), "0000:17:00.0"), "");                      // no such device
  Link("0000:18:00.0", "../../../devices/pci0000:16/0000:16:01.0/0000:17:00.0");  // another's
  EXPECT_EQ(PcieRootOf(root_.string(), "0000:18:00.0"), "");
  Link("0000:19:00.0", "../../../devices/platform/0000:19:00.0");  // not under a root complex
  EXPECT_EQ(PcieRootOf(root_.string(), "0000:19:00.0"), "");
  Link("0000:1a:00.0", "../../../mydevices/pci0000:16/0000:1a:00.0");
  EXPECT_EQ(PcieRootOf(root_.string(), "0000:1a:00.0"), "");
  EXPECT_EQ(PcieRootOf(root_.string(), ""), "");
  EXPECT_EQ(PcieRootOf((root_ / "missing").string(), "0000:17:00.0"), "");
}

}  // namespace
}  // namespace tessera::node
