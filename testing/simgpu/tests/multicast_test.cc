// Multicast objects on an NVLink board: a team of two processes on two devices shares one by file
// descriptor, each binds memory of its own and maps the object; the object charges nothing, the
// bound memory is charged where it lives; only devices of one NVLink group form a team.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "abi/cuda_driver.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

CUmulticastObjectProp Team(unsigned devices, uint64_t bytes) {
  CUmulticastObjectProp prop{};
  prop.numDevices = devices;
  prop.size = bytes;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Binds `bytes` of new memory on `ordinal` to `mc` and maps the object; 0 on success.
int BindAndMap(CUmemGenericAllocationHandle mc, int ordinal, uint64_t bytes) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  CUmemGenericAllocationHandle mem = 0;
  if (cuMemCreate(&mem, bytes, &prop, 0) != CUDA_SUCCESS) return 1;
  if (cuMulticastBindMem(mc, 0, mem, 0, bytes, 0) != CUDA_SUCCESS) return 2;
  if (cuMulticastBindMem(mc, 0, mem, 0, bytes, 0) != CUDA_ERROR_ALREADY_MAPPED) return 3;
  CUdeviceptr va = 0;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (cuMemAddressReserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS ||
      cuMemMap(va, bytes, 0, mc, 0) != CUDA_SUCCESS ||
      cuMemSetAccess(va, bytes, &access, 1) != CUDA_SUCCESS ||
      cuMemsetD8(va, 1, bytes) != CUDA_SUCCESS) {
    return 4;
  }
  return 0;
}

TEST(SimgpuMulticast, ATeamOfTwoProcessesBindsAndMapsOneObject) {
  PrivateState state("count=2,memory=4GiB,ctxmem=100MiB,peers=nvlink");
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ChildGuard creator(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    int supported = 0;
    if (cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0) !=
            CUDA_SUCCESS ||
        supported != 1) {
      return 11;
    }
    CUmulticastObjectProp prop = Team(2, 8 * kMiB);
    size_t granularity = 0;
    CUmemGenericAllocationHandle mc = 0;
    int fd = -1;
    if (cuMulticastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED) !=
            CUDA_SUCCESS ||
        prop.size % granularity != 0 || cuMulticastCreate(&mc, &prop) != CUDA_SUCCESS ||
        cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
            CUDA_SUCCESS ||
        cuMulticastAddDevice(mc, 0) != CUDA_SUCCESS) {
      return 12;
    }
    if (!SendFd(pair[0], fd)) return 13;
    if (int rc = BindAndMap(mc, 0, 8 * kMiB); rc != 0) return 20 + rc;  // waits for the team
    // Device 0 holds its context and its bound 8 MiB: the object itself nothing.
    if (DeviceUsed() != 100 * kMiB + 8 * kMiB) return 14;
    char byte = 0;
    if (read(pair[0], &byte, 1) != 1) return 15;  // the other is done
    return cuMulticastUnbind(mc, 0, 0, 8 * kMiB) == CUDA_SUCCESS ? 0 : 16;
  }));
  ChildGuard member(Spawn([&]() -> int {
    if (UseDevice(1) != 0) return 30;
    int fd = ReceiveFd(pair[1]);
    if (fd < 0) return 31;
    CUmemGenericAllocationHandle mc = 0;
    if (cuMemImportFromShareableHandle(&mc, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS ||
        cuMulticastAddDevice(mc, 1) != CUDA_SUCCESS) {
      return 32;
    }
    if (int rc = BindAndMap(mc, 1, 8 * kMiB); rc != 0) return 40 + rc;
    if (cuMulticastUnbind(mc, 1, 0, 8 * kMiB) != CUDA_SUCCESS ||
        cuMulticastUnbind(mc, 1, 0, 8 * kMiB) != CUDA_ERROR_INVALID_VALUE) {
      return 33;
    }
    char byte = 'd';
    return write(pair[1], &byte, 1) == 1 ? 0 : 34;
  }));
  EXPECT_EQ(member.Reap(), 0);
  EXPECT_EQ(creator.Reap(), 0);
  close(pair[0]);
  close(pair[1]);
}

TEST(SimgpuMulticast, OnlyDevicesOfOneNvlinkGroupFormATeam) {
  PrivateState state("count=4,memory=4GiB,peers=nvlink:0-1/2-3");
  ChildGuard child(Spawn([]() -> int {
    if (UseDevice(0) != 0) return 10;
    CUmulticastObjectProp prop = Team(2, 2 * kMiB);
    CUmemGenericAllocationHandle mc = 0;
    if (cuMulticastCreate(&mc, &prop) != CUDA_SUCCESS) return 11;
    if (cuMulticastAddDevice(mc, 0) != CUDA_SUCCESS) return 12;
    if (cuMulticastAddDevice(mc, 2) != CUDA_ERROR_INVALID_DEVICE) return 13;  // another clique
    if (cuMulticastAddDevice(mc, 1) != CUDA_SUCCESS) return 14;
    CUmulticastObjectProp fabric = prop;
    fabric.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    if (cuMulticastCreate(&mc, &fabric) != CUDA_ERROR_NOT_SUPPORTED) return 15;
    CUmulticastObjectProp odd = Team(2, 3 * kMiB);
    return cuMulticastCreate(&mc, &odd) == CUDA_ERROR_INVALID_VALUE ? 0 : 16;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

TEST(SimgpuMulticast, NotSupportedWithoutNvlink) {
  PrivateState state("count=2,memory=4GiB");
  ChildGuard child(Spawn([]() -> int {
    if (UseDevice(0) != 0) return 10;
    int supported = -1;
    if (cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0) !=
            CUDA_SUCCESS ||
        supported != 0) {
      return 11;
    }
    CUmulticastObjectProp prop = Team(2, 2 * kMiB);
    CUmemGenericAllocationHandle mc = 0;
    return cuMulticastCreate(&mc, &prop) == CUDA_ERROR_NOT_SUPPORTED ? 0 : 12;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

}  // namespace
}  // namespace simgpu::testing
