// Peer access as the machine's topology allows it (SIMGPU_DEVICES peers=): the CUDA queries and
// NVML's P2P status agree with it, peer access is refused between devices that are not peers, and
// another device's IPC memory opens only where its device can be reached.
#include <gtest/gtest.h>
#include <unistd.h>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

int Can(int a, int b) {
  int can = -1;
  return cuDeviceCanAccessPeer(&can, a, b) == CUDA_SUCCESS ? can : -1;
}

nvmlGpuP2PStatus_t Status(int a, int b, nvmlGpuP2PCapsIndex_t index) {
  nvmlDevice_t da, db;
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
  if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(a, &da) != NVML_SUCCESS ||
      nvmlDeviceGetHandleByIndex_v2(b, &db) != NVML_SUCCESS ||
      nvmlDeviceGetP2PStatus(da, db, index, &status) != NVML_SUCCESS) {
    return NVML_P2P_STATUS_UNKNOWN;
  }
  return status;
}

int Attribute(CUdevice_P2PAttribute attribute, int a, int b) {
  int value = -1;
  return cuDeviceGetP2PAttribute(&value, attribute, a, b) == CUDA_SUCCESS ? value : -1;
}

TEST(SimgpuPeers, NvlinkGroupsAndPcieBetweenThem) {
  PrivateState state("count=4,memory=4GiB,peers=nvlink:0-1/2-3");
  ChildGuard child(Spawn([]() -> int {
    if (UseDevice(0) != 0) return 10;
    if (Can(0, 1) != 1 || Can(0, 2) != 1 || Can(1, 1) != 0) return 11;
    if (Attribute(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, 0, 1) != 1 ||
        Attribute(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, 0, 2) != 0 ||
        Attribute(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 2) != 1 ||
        Attribute(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0, 1) >=
            Attribute(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0, 2)) {
      return 12;
    }
    int value = 0;
    if (cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 1) !=
        CUDA_ERROR_INVALID_DEVICE) {
      return 13;
    }
    if (Status(0, 1, NVML_P2P_CAPS_INDEX_NVLINK) != NVML_P2P_STATUS_OK ||
        Status(0, 2, NVML_P2P_CAPS_INDEX_NVLINK) != NVML_P2P_STATUS_NOT_SUPPORTED ||
        Status(0, 2, NVML_P2P_CAPS_INDEX_READ) != NVML_P2P_STATUS_OK) {
      return 14;
    }
    CUcontext peer = nullptr, own = nullptr;
    if (cuDevicePrimaryCtxRetain(&peer, 1) != CUDA_SUCCESS || cuCtxGetCurrent(&own) != CUDA_SUCCESS)
      return 15;
    if (cuCtxEnablePeerAccess(peer, 0) != CUDA_SUCCESS ||
        cuCtxEnablePeerAccess(peer, 0) != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ||
        cuCtxEnablePeerAccess(own, 0) != CUDA_ERROR_INVALID_DEVICE ||
        cuCtxDisablePeerAccess(peer) != CUDA_SUCCESS ||
        cuCtxDisablePeerAccess(peer) != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) {
      return 16;
    }
    CUdeviceptr here = 0, there = 0;
    if (cuMemAlloc(&here, 1 << 20) != CUDA_SUCCESS || cuCtxSetCurrent(peer) != CUDA_SUCCESS ||
        cuMemAlloc(&there, 1 << 20) != CUDA_SUCCESS || cuCtxSetCurrent(own) != CUDA_SUCCESS) {
      return 17;
    }
    return cuMemcpyPeer(there, peer, here, own, 1 << 20) == CUDA_SUCCESS ? 0 : 18;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

TEST(SimgpuPeers, NoPeersWhereTheMachineHasNone) {
  PrivateState state("count=2,memory=4GiB,peers=none");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ChildGuard exporter(Spawn([&]() -> int {
    if (UseDevice(0) != 0) return 10;
    if (Can(0, 1) != 0 || Status(0, 1, NVML_P2P_CAPS_INDEX_READ) != NVML_P2P_STATUS_NOT_SUPPORTED)
      return 11;
    CUcontext peer = nullptr;
    if (cuDevicePrimaryCtxRetain(&peer, 1) != CUDA_SUCCESS ||
        cuCtxEnablePeerAccess(peer, 0) != CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) {
      return 12;
    }
    CUdeviceptr p = 0;
    CUipcMemHandle h;
    if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuIpcGetMemHandle(&h, p) != CUDA_SUCCESS ||
        write(fds[1], &h, sizeof(h)) != static_cast<ssize_t>(sizeof(h))) {
      return 13;
    }
    sleep(2);  // alive while the importer tries
    return 0;
  }));
  ChildGuard importer(Spawn([&]() -> int {
    if (UseDevice(1) != 0) return 20;  // device 1 cannot reach device 0's memory
    CUipcMemHandle h;
    if (read(fds[0], &h, sizeof(h)) != static_cast<ssize_t>(sizeof(h))) return 21;
    CUdeviceptr p = 0;
    return cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                   CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
               ? 0
               : 22;
  }));
  EXPECT_EQ(importer.Reap(), 0);
  EXPECT_EQ(exporter.Reap(), 0);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace simgpu::testing
