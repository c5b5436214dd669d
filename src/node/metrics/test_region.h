// TestRegion: a container's shared region file (abi/shared_region.h) as the library leaves it, for
// the tests of its readers (metrics, spill notices, the agent). Test-only; thread-compatible.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "abi/shared_region.h"

namespace tessera::node::testing {

// `used` bytes charged on device 0 by the process of slot 0, which lives (holds the slot's
// liveness lock) while this object does. Write() writes `region` again after a change; Spill()
// adds the spill appendix with `bytes` of slot 0's charge on `device` served from host memory.
class TestRegion {
 public:
  TestRegion(std::string path, uint64_t used) : path_(std::move(path)) {
    std::memset(region.get(), 0, sizeof(tessera_region));
    region->magic = TESSERA_REGION_MAGIC;
    region->version = TESSERA_REGION_VERSION;
    region->devices[0].used_bytes = used;
    region->slots[0].pid = 1;
    region->slots[0].flags = TESSERA_SLOT_LIVENESS_LOCK;
    region->slots[0].used_bytes[0] = used;
    Write();
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    struct flock fl;
    tessera_slot_liveness_flock(&fl, 0, F_WRLCK);
    EXPECT_EQ(::fcntl(fd_, F_OFD_SETLK, &fl), 0);
  }
  ~TestRegion() { Die(); }
  // The process of slot 0 dies: the kernel drops its lock.
  void Die() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void Write() {
    std::fstream file(path_, std::ios::binary | std::ios::in | std::ios::out);
    if (!file) file.open(path_, std::ios::binary | std::ios::out);
    file.write(reinterpret_cast<const char*>(region.get()), sizeof(tessera_region));
  }
  void Spill(int device, uint64_t bytes) {
    region->spill_offset = TESSERA_REGION_SPILL_OFFSET;
    Write();
    auto spill = std::make_unique<tessera_region_spill>();
    std::memset(spill.get(), 0, sizeof(tessera_region_spill));
    spill->device_bytes[device] = bytes;
    spill->slot_bytes[0][device] = bytes;
    std::fstream file(path_, std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(static_cast<std::streamoff>(TESSERA_REGION_SPILL_OFFSET));
    file.write(reinterpret_cast<const char*>(spill.get()), sizeof(tessera_region_spill));
  }

  std::unique_ptr<tessera_region> region = std::make_unique<tessera_region>();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace tessera::node::testing
