// Interprocess handles across processes: memory opened by another process charges nothing there
// and is usable as device memory; handles die with their allocation or process; event handles
// carry records from one process to another; the calls' errors as the driver documents them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// A pipe from the parent to one child, for handles.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fd), 0); }
  ~Pipe() {
    close(fd[0]);
    close(fd[1]);
  }
  template <typename T>
  void Send(const T& v) {
    ASSERT_EQ(write(fd[1], &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  }
  template <typename T>
  bool Receive(T* v) {
    return read(fd[0], v, sizeof(*v)) == static_cast<ssize_t>(sizeof(*v));
  }
};

// Every test's CUDA work runs in children: a test program's own driver would stay attached to
// the first test's state directory.
TEST(SimgpuIpc, OpenedMemoryIsUsableAndChargedOnceToItsExporter) {
  PrivateState state("count=1,memory=4GiB,ctxmem=100MiB");
  Pipe handles, done;
  pid_t child = Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUipcMemHandle h;
    if (!handles.Receive(&h)) return 20;
    CUdeviceptr p = 0, again = 0, base = 0;
    size_t size = 0;
    if (cuIpcOpenMemHandle(&p, h, 0) != CUDA_ERROR_INVALID_VALUE) return 21;  // flags
    if (cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS) return 22;
    if (cuIpcOpenMemHandle(&again, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS ||
        again != p) {
      return 23;
    }
    if (cuMemGetAddressRange(&base, &size, p + 4096) != CUDA_SUCCESS || base != p ||
        size != 48 * kMiB) {
      return 24;
    }
    CUdeviceptr own = 0;
    if (cuMemAlloc(&own, 16 * kMiB) != CUDA_SUCCESS) return 25;
    if (cuMemcpyDtoD(own, p + 8 * kMiB, 16 * kMiB) != CUDA_SUCCESS) return 26;
    if (cuMemsetD8(p, 1, 48 * kMiB) != CUDA_SUCCESS) return 27;
    if (cuMemsetD8(p, 1, 48 * kMiB + 1) == CUDA_SUCCESS) return 28;  // past the allocation
    // The device holds the exporter's 48 MiB once, the two contexts and this child's 16 MiB.
    if (DeviceUsed() != 2 * 100 * kMiB + 48 * kMiB + 16 * kMiB) return 29;
    if (cuIpcCloseMemHandle(p) != CUDA_SUCCESS || cuIpcCloseMemHandle(p) != CUDA_SUCCESS) return 30;
    if (cuIpcCloseMemHandle(p) != CUDA_ERROR_INVALID_VALUE) return 31;
    if (cuMemsetD8(p, 1, 1) == CUDA_SUCCESS) return 32;  // closed
    return 0;
  });
  ChildGuard importer(child);
  ChildGuard exporter(Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 48 * kMiB) != CUDA_SUCCESS) return 40;
    CUipcMemHandle h, same;
    if (cuIpcGetMemHandle(&h, p + 100) != CUDA_SUCCESS) return 41;  // any pointer into it
    if (cuIpcGetMemHandle(&same, p) != CUDA_SUCCESS) return 42;
    if (std::memcmp(&h, &same, sizeof(h)) != 0) return 43;
    CUdeviceptr mine = 0;
    if (cuIpcOpenMemHandle(&mine, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) !=
        CUDA_ERROR_INVALID_CONTEXT) {
      return 44;  // one's own handle
    }
    handles.Send(h);
    char byte = 0;
    if (!done.Receive(&byte)) return 45;
    return cuMemFree(p) == CUDA_SUCCESS ? 0 : 46;
  }));
  EXPECT_EQ(importer.Reap(), 0);
  char byte = 1;
  done.Send(byte);
  EXPECT_EQ(exporter.Reap(), 0);
}

TEST(SimgpuIpc, AHandleDiesWithItsAllocationAndItsProcess) {
  PrivateState state("count=1,memory=4GiB");
  Pipe handles;
  Pipe results;
  // The exporter frees its allocation after sending; then exits with a second one exported.
  pid_t exporter = Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr a = 0, b = 0;
    CUipcMemHandle ha, hb;
    if (cuMemAlloc(&a, 4 * kMiB) != CUDA_SUCCESS || cuMemAlloc(&b, 4 * kMiB) != CUDA_SUCCESS) {
      return 20;
    }
    if (cuIpcGetMemHandle(&ha, a) != CUDA_SUCCESS || cuIpcGetMemHandle(&hb, b) != CUDA_SUCCESS) {
      return 21;
    }
    if (cuMemFree(a) != CUDA_SUCCESS) return 22;
    handles.Send(ha);
    handles.Send(hb);
    return 0;
  });
  ChildGuard guard(exporter);
  CUipcMemHandle ha, hb;
  ASSERT_TRUE(handles.Receive(&ha));
  ASSERT_TRUE(handles.Receive(&hb));
  EXPECT_EQ(guard.Reap(), 0);
  ChildGuard importer(Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr p = 0;
    if (cuIpcOpenMemHandle(&p, ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) !=
        CUDA_ERROR_INVALID_VALUE) {
      return 20;  // freed
    }
    if (cuIpcOpenMemHandle(&p, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) !=
        CUDA_ERROR_INVALID_VALUE) {
      return 21;  // its process exited
    }
    CUipcMemHandle garbage{};
    return cuIpcOpenMemHandle(&p, garbage, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                   CUDA_ERROR_INVALID_VALUE
               ? 0
               : 22;
  }));
  EXPECT_EQ(importer.Reap(), 0);
}

TEST(SimgpuIpc, OnlyPlainAllocationsHaveHandles) {
  PrivateState state("count=1,memory=4GiB");
  ChildGuard child(Spawn([]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUipcMemHandle h;
    CUdeviceptr pooled = 0, managed = 0;
    if (cuMemAllocAsync(&pooled, kMiB, nullptr) != CUDA_SUCCESS) return 20;
    if (cuMemAllocManaged(&managed, kMiB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS) return 21;
    if (cuIpcGetMemHandle(&h, pooled) != CUDA_ERROR_INVALID_VALUE) return 22;
    if (cuIpcGetMemHandle(&h, managed) != CUDA_ERROR_INVALID_VALUE) return 23;
    if (cuIpcGetMemHandle(&h, 0x1000) != CUDA_ERROR_INVALID_VALUE) return 24;
    if (cuIpcGetMemHandle(nullptr, managed) != CUDA_ERROR_INVALID_VALUE) return 25;
    return 0;
  }));
  EXPECT_EQ(child.Reap(), 0);
}

TEST(SimgpuIpc, AnOpenedEventWaitsForTheExportersWork) {
  PrivateState state("count=1,memory=4GiB");
  Pipe handles, done;
  pid_t child = Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUipcEventHandle h;
    if (!handles.Receive(&h)) return 20;
    CUevent ev = nullptr;
    if (cuIpcOpenEventHandle(&ev, h) != CUDA_SUCCESS) return 21;
    if (cuEventQuery(ev) != CUDA_ERROR_NOT_READY) return 22;  // the exporter's 300 ms kernel
    CUstream s = nullptr;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 23;
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 30;
    if (cuModuleGetFunction(&f, mod, "busy_10us") != CUDA_SUCCESS) return 31;
    if (cuStreamWaitEvent(s, ev, 0) != CUDA_SUCCESS) return 24;
    if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr) != CUDA_SUCCESS) return 32;
    if (cuStreamQuery(s) != CUDA_ERROR_NOT_READY) return 25;  // waits for the other process
    if (cuEventSynchronize(ev) != CUDA_SUCCESS || cuEventQuery(ev) != CUDA_SUCCESS) return 26;
    if (cuStreamSynchronize(s) != CUDA_SUCCESS) return 27;
    float ms = 0;
    if (cuEventElapsedTime(&ms, ev, ev) != CUDA_ERROR_INVALID_HANDLE) return 28;  // no timing
    return cuEventDestroy(ev) == CUDA_SUCCESS ? 0 : 29;
  });
  ChildGuard importer(child);
  ChildGuard exporter(Spawn([&]() -> int {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUevent timed = nullptr, ev = nullptr;
    if (cuEventCreate(&timed, CU_EVENT_INTERPROCESS) != CUDA_ERROR_INVALID_VALUE) return 40;
    if (cuEventCreate(&timed, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return 41;
    CUipcEventHandle h;
    if (cuIpcGetEventHandle(&h, timed) != CUDA_ERROR_INVALID_VALUE) return 42;  // not interprocess
    if (cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
      return 43;
    }
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 44;
    if (cuModuleGetFunction(&f, mod, "busy_300000us") != CUDA_SUCCESS) return 45;
    if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS) {
      return 46;
    }
    if (cuEventRecord(ev, nullptr) != CUDA_SUCCESS) return 47;
    if (cuIpcGetEventHandle(&h, ev) != CUDA_SUCCESS) return 48;
    CUevent own = nullptr;
    if (cuIpcOpenEventHandle(&own, h) != CUDA_ERROR_INVALID_CONTEXT) return 49;
    handles.Send(h);
    char byte = 0;
    if (!done.Receive(&byte)) return 50;
    return cuEventQuery(ev) == CUDA_SUCCESS ? 0 : 51;
  }));
  EXPECT_EQ(importer.Reap(), 0);
  char byte = 1;
  done.Send(byte);
  EXPECT_EQ(exporter.Reap(), 0);
}

}  // namespace
}  // namespace simgpu::testing
