// tessera-hostile-workload: what a hostile user runs in a GPU container to hold more device
// memory than the container's limit. The cluster test of the node agent's memory guard
// (testing/cluster/tests/memory_guard.sh) runs it; it is in the cluster's workload image.
//
//   zero-region         allocates through libtessera-cuda.so in 64 MiB steps and, before each
//                       step, zeroes the usage in the container's shared region, so that the
//                       library's accounting never reaches the limit;
//   bypass              calls libcuda.so.1's own functions, found in its symbol table on disk
//                       at the address the loader mapped it (not through dynamic linking, which
//                       the preloaded library interposes on), so the library never sees a call;
//   fill-after SECONDS  (the neighbour) waits, then allocates through the library until out of
//                       memory.
// The first two stop at the first failed step, print `hostile.allocated_mib=N` and hold the
// memory until they are killed; fill-after prints `fill.allocated_mib=N` and exits 0.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "abi/cuda_driver.h"
#include "abi/limits_format.h"
#include "abi/shared_region.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kStep = 64 * kMiB;
constexpr uint64_t kMaxSteps = 16384;  // 1 TiB

// The driver calls a mode allocates through.
struct Driver {
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDevicePrimaryCtxRetain) retain;
  decltype(&cuCtxSetCurrent) set_current;
  CUresult (*alloc)(CUdeviceptr*, size_t);
};

Driver Linked() {
  return {&cuInit, &cuDeviceGet, &cuDevicePrimaryCtxRetain, &cuCtxSetCurrent, &cuMemAlloc};
}

// The address of `name` in the loaded object `map`, from the .dynsym of its file; 0 if absent.
uintptr_t OwnSymbol(const link_map* map, const char* name) {
  std::ifstream in(map->l_name, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), {});
  if (file.size() < sizeof(Elf64_Ehdr)) return 0;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(file.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(file.data() + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM) continue;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(file.data() + sections[i].sh_offset);
    const char* names = file.data() + sections[sections[i].sh_link].sh_offset;
    for (size_t k = 0; k < sections[i].sh_size / sizeof(Elf64_Sym); ++k) {
      if (syms[k].st_value != 0 && std::strcmp(names + syms[k].st_name, name) == 0) {
        return map->l_addr + syms[k].st_value;
      }
    }
  }
  return 0;
}

// libcuda.so.1's own functions, past the preloaded library's interposition.
bool Own(Driver& d) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  link_map* map = nullptr;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || !map) {
    std::fprintf(stderr, "hostile: libcuda.so.1 is not loaded: %s\n", dlerror());
    return false;
  }
  d.init = reinterpret_cast<decltype(d.init)>(OwnSymbol(map, "cuInit"));
  d.device_get = reinterpret_cast<decltype(d.device_get)>(OwnSymbol(map, "cuDeviceGet"));
  d.retain = reinterpret_cast<decltype(d.retain)>(OwnSymbol(map, "cuDevicePrimaryCtxRetain"));
  d.set_current = reinterpret_cast<decltype(d.set_current)>(OwnSymbol(map, "cuCtxSetCurrent"));
  d.alloc = reinterpret_cast<decltype(d.alloc)>(OwnSymbol(map, "cuMemAlloc_v2"));
  return d.init && d.device_get && d.retain && d.set_current && d.alloc;
}

bool Start(const Driver& d) {
  CUdevice device;
  CUcontext context;
  return d.init(0) == CUDA_SUCCESS && d.device_get(&device, 0) == CUDA_SUCCESS &&
         d.retain(&context, device) == CUDA_SUCCESS && d.set_current(context) == CUDA_SUCCESS;
}

// The container's shared region, mapped writable, or null.
tessera_region* MapRegion() {
  std::ifstream limits(TESSERA_LIMITS_PATH);
  std::string path = TESSERA_REGION_DEFAULT_PATH;
  for (std::string line; std::getline(limits, line);) {
    if (line.rfind("region=", 0) == 0) path = line.substr(7);
  }
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, sizeof(tessera_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<tessera_region*>(p);
}

void ZeroUsage(tessera_region* r) {
  for (auto& d : r->devices) __atomic_store_n(&d.used_bytes, 0, __ATOMIC_RELAXED);
  for (auto& s : r->slots) {
    for (auto& u : s.used_bytes) __atomic_store_n(&u, 0, __ATOMIC_RELAXED);
  }
}

// Allocates in steps until one fails; `before_step` runs before each. The MiB allocated.
template <typename BeforeStep>
uint64_t Fill(const Driver& d, BeforeStep before_step) {
  uint64_t steps = 0;
  for (; steps < kMaxSteps; ++steps) {
    before_step();
    CUdeviceptr p = 0;
    if (d.alloc(&p, kStep) != CUDA_SUCCESS) break;
  }
  return steps * kStep / kMiB;
}

[[noreturn]] void Hold(uint64_t mib) {
  std::printf("hostile.allocated_mib=%llu\n", static_cast<unsigned long long>(mib));
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "zero-region") {
    Driver d = Linked();
    if (!Start(d)) return 1;
    tessera_region* region = MapRegion();
    if (!region) {
      std::fprintf(stderr, "hostile: cannot map the shared region\n");
      return 1;
    }
    Hold(Fill(d, [region] { ZeroUsage(region); }));
  }
  if (mode == "bypass") {
    Driver d{};
    if (!Own(d) || !Start(d)) return 1;
    Hold(Fill(d, [] {}));
  }
  if (mode == "fill-after" && argc > 2) {
    sleep(static_cast<unsigned>(std::atoi(argv[2])));
    Driver d = Linked();
    if (!Start(d)) return 1;
    std::printf("fill.allocated_mib=%llu\n", static_cast<unsigned long long>(Fill(d, [] {})));
    return 0;
  }
  std::fprintf(stderr,
               "usage: tessera-hostile-workload zero-region | bypass | fill-after SECONDS\n");
  return 2;
}
