#include "pinned_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace simgpu {
namespace {

constexpr uint64_t kUnlimited = UINT64_MAX;

// The first whole number in `path` (a cgroup file), or `fallback` when the file is missing or
// holds none (v2's "max").
uint64_t ReadNumber(const std::string& path, uint64_t fallback) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return fallback;
  return v;
}

// The value of `key` in a "key value" file (memory.stat, /proc/meminfo), 0 when absent.
uint64_t ReadKeyed(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t v = 0;
    if (fields >> name >> v && (name == key || name == key + ":")) return v;
  }
  return 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A memory cgroup hierarchy: where it is mounted and its file names.
struct Hierarchy {
  std::string mount;
  const char* limit;
  const char* usage;
  const char* inactive_file;
};

// The headroom of cgroup `path` (as /proc/self/cgroup names it) and its ancestors, as far as they
// are visible under the mount (in a cgroup namespace the process's own cgroup is the mount's root).
uint64_t CgroupHeadroom(const Hierarchy& h, std::string path) {
  uint64_t headroom = kUnlimited;
  while (true) {
    std::string dir = h.mount + path;
    if (IsDirectory(dir)) {
      uint64_t limit = ReadNumber(dir + "/" + h.limit, kUnlimited);
      uint64_t usage = ReadNumber(dir + "/" + h.usage, 0);
      uint64_t reclaimable = ReadKeyed(dir + "/memory.stat", h.inactive_file);
      uint64_t working = usage - std::min(usage, reclaimable);
      if (limit != kUnlimited) headroom = std::min(headroom, limit - std::min(limit, working));
    }
    if (path.empty() || path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  return headroom;
}

uint64_t CgroupsHeadroom() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  uint64_t headroom = kUnlimited;
  while (std::getline(in, line)) {
    // "<id>:<controllers>:<path>"; v2 has id 0 and no controllers.
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controllers.empty() && IsDirectory("/sys/fs/cgroup") &&
        access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
      Hierarchy v2{"/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"};
      headroom = std::min(headroom, CgroupHeadroom(v2, path));
    }
    std::string list = "," + controllers + ",";
    if (list.find(",memory,") != std::string::npos) {
      Hierarchy v1{"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
                   "total_inactive_file"};
      headroom = std::min(headroom, CgroupHeadroom(v1, path));
    }
  }
  return headroom;
}

bool Fits(uint64_t bytes) {
  return bytes <= HostMemoryHeadroom();
}

// Whether every byte of [first, end) is mapped readable (and writable when `write`), as
// /proc/self/maps lists the process's mappings in address order.
bool Accessible(uint64_t first, uint64_t end, bool write) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uint64_t covered = first;  // everything below is accessible
  while (covered < end && std::getline(maps, line)) {
    uint64_t lo = 0, hi = 0;
    char dash = 0;
    std::string perms;
    std::istringstream fields(line);
    if (!(fields >> std::hex >> lo >> dash >> hi >> perms) || hi <= covered) continue;
    if (lo > covered) return false;  // a hole
    if (perms.size() < 2 || perms[0] != 'r' || (write && perms[1] != 'w')) return false;
    covered = hi;
  }
  return covered >= end;
}

// The bytes of [start, start + length) (whole pages, mapped) not resident yet.
uint64_t MissingBytes(char* start, uint64_t length) {
  uint64_t page = PageBytes();
  constexpr uint64_t kWindowPages = 4096;  // mincore's answer in slices, whatever the length
  std::vector<unsigned char> resident(kWindowPages);
  uint64_t missing = 0;
  for (uint64_t at = 0; at < length; at += kWindowPages * page) {
    uint64_t slice = std::min(length - at, kWindowPages * page);
    if (mincore(start + at, slice, resident.data()) != 0) return length;  // unmapped meanwhile
    for (uint64_t i = 0; i < slice / page; ++i) missing += (resident[i] & 1) == 0 ? page : 0;
  }
  return missing;
}

}  // namespace

uint64_t PageBytes() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t HostMemoryHeadroom() {
  uint64_t available_kib = ReadKeyed("/proc/meminfo", "MemAvailable");
  uint64_t host = available_kib == 0 ? kUnlimited : available_kib * 1024;
  return std::min(host, CgroupsHeadroom());
}

void* AllocPinnedPages(uint64_t bytes) {
  uint64_t page = PageBytes();
  if (bytes == 0 || bytes > UINT64_MAX - page) return nullptr;
  uint64_t mapped = (bytes + page - 1) / page * page;
  if (!Fits(mapped)) return nullptr;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (madvise(p, mapped, MADV_POPULATE_WRITE) == 0) return p;
  if (errno != EINVAL) {  // ENOMEM: the pages could not all be given
    munmap(p, mapped);
    return nullptr;
  }
  // A kernel without MADV_POPULATE_WRITE: write each page in.
  auto* bytes_at = static_cast<volatile char*>(p);
  for (uint64_t at = 0; at < mapped; at += page) bytes_at[at] = 0;
  return p;
}

void FreePinnedPages(void* p, uint64_t bytes) {
  uint64_t page = PageBytes();
  munmap(p, (bytes + page - 1) / page * page);
}

PinOutcome PinRange(void* p, uint64_t bytes, bool read_only) {
  uint64_t page = PageBytes();
  uint64_t first = reinterpret_cast<uint64_t>(p) / page * page;
  uint64_t end = reinterpret_cast<uint64_t>(p) + bytes;
  if (end < first || end > UINT64_MAX - page) return PinOutcome::kBadRange;
  end = (end + page - 1) / page * page;
  if (!Accessible(first, end, !read_only)) return PinOutcome::kBadRange;
  auto* start = reinterpret_cast<char*>(first);
  if (!Fits(MissingBytes(start, end - first))) return PinOutcome::kShort;
  if (madvise(start, end - first, read_only ? MADV_POPULATE_READ : MADV_POPULATE_WRITE) == 0) {
    return PinOutcome::kPinned;
  }
  if (errno == ENOMEM) return PinOutcome::kShort;
  if (errno != EINVAL) return PinOutcome::kBadRange;  // EFAULT: a page would fault
  // A kernel without MADV_POPULATE_* (the access was checked above): touch each page; an atomic
  // add of 0 writes without changing anything, whatever other threads store meanwhile.
  for (char* at = start; at < reinterpret_cast<char*>(end); at += page) {
    if (read_only) {
      (void)*static_cast<volatile char*>(at);
    } else {
      __atomic_fetch_add(at, 0, __ATOMIC_RELAXED);
    }
  }
  return PinOutcome::kPinned;
}

bool PopulateMemfd(int fd, uint64_t offset, uint64_t size) {
  if (!Fits(size)) return false;
  return fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(size)) == 0;
}

}  // namespace simgpu
