// VMM memory shared between processes by POSIX file descriptor: the memory lives while any process
// holds it, charged to its creator while the creator does, then counted by the device alone; the
// descriptors travel over a Unix socket as NCCL sends them; retained handles and properties.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kCtx = 100 * kMiB;

// A socket pair between two children: descriptors and single bytes.
struct Channel {
  int fd[2] = {-1, -1};
  Channel() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Channel() {
    close(fd[0]);
    close(fd[1]);
  }
  bool SendFd(int side, int passed) { return testing::SendFd(fd[side], passed); }
  int ReceiveFd(int side) { return testing::ReceiveFd(fd[side]); }
  bool Signal(int side) {
    char byte = 's';
    return write(fd[side], &byte, 1) == 1;
  }
  bool Wait(int side) {
    char byte = 0;
    return read(fd[side], &byte, 1) == 1;
  }
};

// What NVML charges the calling process on device 0.
uint64_t OwnUsed() {
  nvmlDevice_t dev;
  nvmlProcessInfo_t procs[16];
  unsigned count = 16;
  if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &dev) != NVML_SUCCESS ||
      nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, procs) != NVML_SUCCESS) {
    return UINT64_MAX;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (procs[i].pid == static_cast<unsigned>(getpid())) return procs[i].usedGpuMemory;
  }
  return 0;
}

CUmemAllocationProp DeviceProp(unsigned handle_types) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

// Reserves, maps and grants access to `h` of `bytes`; 0 on failure.
CUdeviceptr MapHandle(CUmemGenericAllocationHandle h, uint64_t bytes) {
  CUdeviceptr va = 0;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (cuMemAddressReserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS ||
      cuMemMap(va, bytes, 0, h, 0) != CUDA_SUCCESS ||
      cuMemSetAccess(va, bytes, &access, 1) != CUDA_SUCCESS) {
    return 0;
  }
  return va;
}

bool Unmap(CUdeviceptr va, uint64_t bytes) {
  return cuMemUnmap(va, bytes) == CUDA_SUCCESS && cuMemAddressFree(va, bytes) == CUDA_SUCCESS;
}

TEST(SimgpuVmmShare, MemoryLivesWhileAnyProcessHoldsItAndIsChargedOnce) {
  PrivateState state("count=1,memory=4GiB,ctxmem=100MiB");
  Channel channel;
  ChildGuard creator(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    CUmemAllocationProp prop = DeviceProp(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0;
    if (cuMemCreate(&h, 64 * kMiB, &prop, 0) != CUDA_SUCCESS) return 11;
    CUdeviceptr va = MapHandle(h, 64 * kMiB);
    if (va == 0) return 12;
    int fd = -1;
    if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
        CUDA_SUCCESS) {
      return 13;
    }
    if (!channel.SendFd(0, fd)) return 14;
    close(fd);
    if (!channel.Wait(0)) return 15;  // the importer mapped it
    if (OwnUsed() != kCtx + 64 * kMiB) return 16;
    // Let go first: the importer still holds the memory, which no process is charged for now.
    if (!Unmap(va, 64 * kMiB) || cuMemRelease(h) != CUDA_SUCCESS) return 17;
    if (OwnUsed() != kCtx || DeviceUsed() != 2 * kCtx + 64 * kMiB) return 18;
    if (!channel.Signal(0) || !channel.Wait(0)) return 19;  // the importer let go
    if (DeviceUsed() != 2 * kCtx) return 20;
    return channel.Signal(0) ? 0 : 21;  // the importer may exit
  }));
  ChildGuard importer(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 30;
    int fd = channel.ReceiveFd(1);
    if (fd < 0) return 31;
    CUmemGenericAllocationHandle h = 0;
    if (cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS) {
      return 32;
    }
    close(fd);
    CUmemAllocationProp prop{};
    if (cuMemGetAllocationPropertiesFromHandle(&prop, h) != CUDA_SUCCESS ||
        prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop.location.id != 0) {
      return 33;
    }
    CUdeviceptr va = MapHandle(h, 64 * kMiB);
    if (va == 0) return 34;
    if (cuMemsetD8(va, 1, 64 * kMiB) != CUDA_SUCCESS) return 35;
    // Once on the device, to the creator: nothing to this process.
    if (DeviceUsed() != 2 * kCtx + 64 * kMiB || OwnUsed() != kCtx) return 36;
    if (!channel.Signal(1) || !channel.Wait(1)) return 37;        // the creator let go
    if (cuMemsetD8(va, 2, 64 * kMiB) != CUDA_SUCCESS) return 38;  // still there
    // NCCL's teardown: retain, release, unmap, release.
    CUmemGenericAllocationHandle again = 0;
    if (cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va)) != CUDA_SUCCESS ||
        again != h || cuMemRelease(again) != CUDA_SUCCESS) {
      return 39;
    }
    size_t size = 0;
    if (cuMemGetAddressRange(nullptr, &size, va) != CUDA_SUCCESS || size != 64 * kMiB) return 40;
    if (!Unmap(va, size) || cuMemRelease(h) != CUDA_SUCCESS) return 41;
    if (DeviceUsed() != 2 * kCtx) return 42;
    return channel.Signal(1) && channel.Wait(1) ? 0 : 43;
  }));
  EXPECT_EQ(importer.Reap(), 0);
  EXPECT_EQ(creator.Reap(), 0);
}

TEST(SimgpuVmmShare, TheMemoryOutlivesItsCreatorWhileImported) {
  PrivateState state("count=1,memory=4GiB,ctxmem=100MiB");
  Channel channel;
  ChildGuard creator(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    CUmemAllocationProp prop = DeviceProp(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0;
    int fd = -1;
    if (cuMemCreate(&h, 32 * kMiB, &prop, 0) != CUDA_SUCCESS ||
        cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
            CUDA_SUCCESS) {
      return 11;
    }
    if (!channel.SendFd(0, fd) || !channel.Wait(0)) return 12;
    _exit(0);  // without releasing: as if killed
  }));
  ChildGuard importer(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 30;
    int fd = channel.ReceiveFd(1);
    CUmemGenericAllocationHandle h = 0;
    if (cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS) {
      return 31;
    }
    if (!channel.Signal(1)) return 32;
    // The creator is gone; the memory is not.
    for (int i = 0; i < 200 && DeviceUsed() != kCtx + 32 * kMiB; ++i) usleep(10'000);
    if (DeviceUsed() != kCtx + 32 * kMiB || OwnUsed() != kCtx) return 33;
    CUdeviceptr va = MapHandle(h, 32 * kMiB);
    if (va == 0 || !Unmap(va, 32 * kMiB) || cuMemRelease(h) != CUDA_SUCCESS) return 34;
    return DeviceUsed() == kCtx ? 0 : 35;
  }));
  EXPECT_EQ(creator.Reap(), 0);
  EXPECT_EQ(importer.Reap(), 0);
}

// The protection of the page at `va` as /proc/self/maps gives it ("rw-s", "---s"), or "".
std::string Protection(CUdeviceptr va) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == nullptr) return "";
  char line[512];
  std::string out;
  while (fgets(line, sizeof line, maps) != nullptr) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    if (sscanf(line, "%llx-%llx %7s", &start, &end, perms) == 3 && va >= start && va < end) {
      out = perms;
      break;
    }
  }
  fclose(maps);
  return out;
}

// NCCL's host memory over cuMem (ncclCuMemHostAlloc, its shared-memory transport): a HOST_NUMA
// handle on the device's host NUMA node, mapped and given access for the device and then for the
// host; the CPU reads and writes it through the mapping's address, in the creator and in a process
// that imported it by descriptor; it charges no device memory. Before a host location is given
// access, the CPU may not touch it.
TEST(SimgpuVmmShare, HostLocatedMemoryIsHostMemoryTheCpuReachesAtItsMapping) {
  PrivateState state("count=1,memory=4GiB,ctxmem=100MiB");
  Channel channel;
  auto map_host = [](CUmemGenericAllocationHandle h, uint64_t bytes, int numa) -> CUdeviceptr {
    CUdeviceptr va = 0;
    if (cuMemAddressReserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS ||
        cuMemMap(va, bytes, 0, h, 0) != CUDA_SUCCESS) {
      return 0;
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemSetAccess(va, bytes, &access, 1) != CUDA_SUCCESS) return 0;
    if (Protection(va) != "---s") return 0;  // the device's access is not the CPU's
    access.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    access.location.id = numa;
    if (cuMemSetAccess(va, bytes, &access, 1) != CUDA_SUCCESS) return 0;
    return Protection(va) == "rw-s" ? va : 0;
  };
  ChildGuard creator(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    int numa = -1;
    if (cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0) != CUDA_SUCCESS ||
        numa < 0) {
      return 11;
    }
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = numa;
    CUmemGenericAllocationHandle h = 0;
    if (cuMemCreate(&h, 4 * kMiB, &prop, 0) != CUDA_SUCCESS) return 12;
    CUdeviceptr va = map_host(h, 4 * kMiB, numa);
    if (va == 0) return 13;
    auto* bytes = reinterpret_cast<volatile uint32_t*>(va);
    bytes[0] = 0xfeed;
    bytes[4 * kMiB / 4 - 1] = 7;
    if (OwnUsed() != kCtx) return 14;  // not device memory
    int fd = -1;
    if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
            CUDA_SUCCESS ||
        !channel.SendFd(0, fd)) {
      return 15;
    }
    close(fd);
    if (!channel.Wait(0)) return 16;  // the importer read it and wrote its answer
    if (bytes[1] != 0xbeef) return 17;
    if (cuMemUnmap(va, 4 * kMiB) != CUDA_SUCCESS || Protection(va) != "") return 18;
    if (cuMemAddressFree(va, 4 * kMiB) != CUDA_SUCCESS || cuMemRelease(h) != CUDA_SUCCESS) {
      return 19;
    }
    return channel.Signal(0) ? 0 : 20;
  }));
  ChildGuard importer(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 30;
    int fd = channel.ReceiveFd(1);
    CUmemGenericAllocationHandle h = 0;
    if (fd < 0 ||
        cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS) {
      return 31;
    }
    close(fd);
    CUdeviceptr va = map_host(h, 4 * kMiB, 0);
    if (va == 0) return 32;
    auto* bytes = reinterpret_cast<volatile uint32_t*>(va);
    if (bytes[0] != 0xfeed || bytes[4 * kMiB / 4 - 1] != 7) return 33;
    bytes[1] = 0xbeef;
    if (!channel.Signal(1) || !channel.Wait(1)) return 34;
    if (bytes[0] != 0xfeed) return 35;  // the creator let go; this process still holds it
    if (cuMemUnmap(va, 4 * kMiB) != CUDA_SUCCESS || cuMemRelease(h) != CUDA_SUCCESS) return 36;
    return OwnUsed() == kCtx ? 0 : 37;
  }));
  EXPECT_EQ(creator.Reap(), 0);
  EXPECT_EQ(importer.Reap(), 0);
}

// Vulkan interop's imports (cuda_external.cc): an exported descriptor imported as external memory
// holds the memory without charging the importer; a buffer on it is device memory that cuMemFree
// frees; the errors are the driver's.
TEST(SimgpuVmmShare, ExternalMemoryAndSemaphoresImportedByDescriptor) {
  PrivateState state("count=1,memory=4GiB,ctxmem=100MiB");
  ChildGuard child(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    CUmemAllocationProp prop = DeviceProp(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0;
    int fd = -1;
    if (cuMemCreate(&h, 8 * kMiB, &prop, 0) != CUDA_SUCCESS ||
        cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
            CUDA_SUCCESS) {
      return 11;
    }
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
    desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32;
    desc.size = 8 * kMiB;
    CUexternalMemory mem = nullptr;
    if (cuImportExternalMemory(&mem, &desc) != CUDA_ERROR_NOT_SUPPORTED) return 12;
    desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = eventfd(0, EFD_CLOEXEC);  // not a descriptor of this driver
    if (cuImportExternalMemory(&mem, &desc) != CUDA_ERROR_INVALID_HANDLE) return 13;
    close(desc.handle.fd);
    desc.handle.fd = fd;
    desc.size = 16 * kMiB;  // more than the memory
    if (cuImportExternalMemory(&mem, &desc) != CUDA_ERROR_INVALID_VALUE) return 14;
    desc.size = 8 * kMiB;
    if (cuImportExternalMemory(&mem, &desc) != CUDA_SUCCESS) return 15;
    if (fcntl(fd, F_GETFD) != -1) return 16;  // the driver owns and closed it
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer{};
    buffer.offset = 6 * kMiB;
    buffer.size = 4 * kMiB;
    CUdeviceptr ptr = 0;
    if (cuExternalMemoryGetMappedBuffer(&ptr, mem, &buffer) != CUDA_ERROR_INVALID_VALUE) return 17;
    buffer.offset = 4 * kMiB;
    if (cuExternalMemoryGetMappedBuffer(&ptr, mem, &buffer) != CUDA_SUCCESS) return 18;
    size_t size = 0;
    if (cuMemsetD8(ptr, 7, 4 * kMiB) != CUDA_SUCCESS ||
        cuMemGetAddressRange(nullptr, &size, ptr + 1) != CUDA_SUCCESS || size != 4 * kMiB) {
      return 19;
    }
    if (OwnUsed() != kCtx + 8 * kMiB) return 20;  // the creator's allocation, once
    if (cuMemRelease(h) != CUDA_SUCCESS) return 21;
    // This process still holds the memory, by its import, and NVML still counts it to it.
    if (OwnUsed() != kCtx + 8 * kMiB) return 22;
    if (cuDestroyExternalMemory(mem) != CUDA_SUCCESS || OwnUsed() != kCtx) return 23;
    if (cuDestroyExternalMemory(mem) != CUDA_ERROR_INVALID_HANDLE) return 24;
    if (cuMemFree(ptr) != CUDA_SUCCESS) return 25;  // the program frees its buffer

    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC sem_desc{};
    sem_desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE;
    CUexternalSemaphore sem = nullptr;
    if (cuImportExternalSemaphore(&sem, &sem_desc) != CUDA_ERROR_NOT_SUPPORTED) return 26;
    sem_desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    sem_desc.handle.fd = eventfd(0, EFD_CLOEXEC);
    if (cuImportExternalSemaphore(&sem, &sem_desc) != CUDA_SUCCESS) return 27;
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal{};
    signal.params.fence.value = 3;
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait{};
    wait.params.fence.value = 3;
    if (cuSignalExternalSemaphoresAsync(&sem, &signal, 1, nullptr) != CUDA_SUCCESS ||
        cuWaitExternalSemaphoresAsync(&sem, &wait, 1, nullptr) != CUDA_SUCCESS ||
        cuSignalExternalSemaphoresAsync(&sem, &signal, 0, nullptr) != CUDA_ERROR_INVALID_VALUE) {
      return 28;
    }
    if (cuDestroyExternalSemaphore(sem) != CUDA_SUCCESS ||
        cuWaitExternalSemaphoresAsync(&sem, &wait, 1, nullptr) != CUDA_ERROR_INVALID_HANDLE) {
      return 29;
    }
    return 0;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

TEST(SimgpuVmmShare, CallsRefusedAsTheDriverRefusesThem) {
  PrivateState state("count=1,memory=4GiB");
  ChildGuard child(Spawn([]() -> int {
    if (UseDevice(0) != 0) return 10;
    CUmemAllocationProp fabric =
        DeviceProp(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
    CUmemGenericAllocationHandle h = 0;
    if (cuMemCreate(&h, 2 * kMiB, &fabric, 0) != CUDA_ERROR_NOT_SUPPORTED) return 11;
    CUmemAllocationProp plain = DeviceProp(CU_MEM_HANDLE_TYPE_NONE);
    if (cuMemCreate(&h, 2 * kMiB, &plain, 0) != CUDA_SUCCESS) return 12;
    int fd = -1;
    if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
        CUDA_ERROR_INVALID_VALUE) {
      return 13;  // not asked for at creation
    }
    int not_ours = dup(0);
    CUmemGenericAllocationHandle imported = 0;
    if (cuMemImportFromShareableHandle(
            &imported, reinterpret_cast<void*>(static_cast<intptr_t>(not_ours)),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_ERROR_INVALID_VALUE) {
      return 14;
    }
    CUmemGenericAllocationHandle retained = 0;
    if (cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(0x1000)) !=
        CUDA_ERROR_INVALID_VALUE) {
      return 15;
    }
    // A retained handle outlives one release.
    CUdeviceptr va = MapHandle(h, 2 * kMiB);
    if (va == 0) return 16;
    if (cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va)) != CUDA_SUCCESS ||
        retained != h) {
      return 17;
    }
    if (cuMemRelease(h) != CUDA_SUCCESS || !Unmap(va, 2 * kMiB)) return 18;
    if (cuMemRelease(h) != CUDA_SUCCESS) return 19;  // the retained reference
    if (cuMemRelease(h) != CUDA_ERROR_INVALID_VALUE) return 20;
    return 0;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

}  // namespace
}  // namespace simgpu::testing
