#include "host_backing.h"

#include <sys/mman.h>
#include <unistd.h>

namespace simgpu {

int NewHostBacking(uint64_t size) {
  int fd = memfd_create("simgpu-host-vmm", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(kHostBackingHeader + size)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool MapHostBacking(int fd, uint64_t va, uint64_t size, uint64_t offset) {
  void* at = reinterpret_cast<void*>(va);
  void* p = mmap(at, size, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
                 static_cast<off_t>(kHostBackingHeader + offset));
  if (p == MAP_FAILED) return false;
  if (p != at) {  // a kernel older than MAP_FIXED_NOREPLACE took it as a hint
    munmap(p, size);
    return false;
  }
  return true;
}

void UnmapHostBacking(uint64_t va, uint64_t size) {
  munmap(reinterpret_cast<void*>(va), size);
}

void AllowHostAccess(uint64_t va, uint64_t size) {
  mprotect(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE);
}

}  // namespace simgpu
