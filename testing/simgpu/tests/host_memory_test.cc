// Host memory the device maps, as issue 33's spilling needs it: pinned host allocations
// (cuMemHostAlloc) are real, resident pages that take no device memory, are reached at their host
// address and show in `simgpu stat` per process; `touch_<N>ns` kernels read device memory at N ns
// per MiB and host memory hostslow= times slower, and fault (a sticky CUDA_ERROR_ILLEGAL_ADDRESS)
// outside what their device addresses; device memory stays enforced across processes.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "abi/cuda_driver.h"
#include "sim_test_env.h"

// The first ABI of cuMemHostRegister (CUDA 4.0: whole pages), which cuda_driver.h leaves out.
extern "C" CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Reports a failed check of the child on stderr; the child then exits with `code`.
#define CHILD_CHECK(cond, code)                                                      \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #cond); \
      return code;                                                                   \
    }                                                                                \
  } while (0)

// Device 0's entry in `simgpu stat`.
nlohmann::json Device(PrivateState& state, int index = 0) {
  return state.Stat()["devices"][index];
}

// The host bytes `simgpu stat` shows this process holding for device 0.
uint64_t MyHostBytes(PrivateState& state) {
  nlohmann::json by_pid = Device(state)["host_mapped_bytes_by_pid"];
  std::string me = std::to_string(getpid());
  return by_pid.contains(me) ? by_pid[me].get<uint64_t>() : 0;
}

// Whether every page of [p, p + bytes) is resident.
bool Resident(void* p, uint64_t bytes) {
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((bytes + page - 1) / page);
  if (mincore(p, bytes, pages.data()) != 0) return false;
  for (unsigned char v : pages) {
    if ((v & 1) == 0) return false;
  }
  return true;
}

size_t FreeDeviceBytes() {
  size_t free_bytes = 0, total = 0;
  if (cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) return 0;
  return free_bytes;
}

int PinnedRoundTrip(PrivateState& state) {
  if (int rc = UseDevice(0); rc != 0) return rc;
  // Every device maps host memory, at the host's addresses, and registers it (read-only too).
  for (CUdevice_attribute attribute :
       {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
        CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
        CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED}) {
    int value = 0;
    CHILD_CHECK(cuDeviceGetAttribute(&value, attribute, 0) == CUDA_SUCCESS && value == 1, 19);
  }
  size_t free_before = FreeDeviceBytes();
  CHILD_CHECK(free_before > 0, 20);
  void* p = nullptr;
  constexpr uint64_t kBytes = 64 * kMiB;
  unsigned flags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
  CHILD_CHECK(cuMemHostAlloc(&p, kBytes, flags) == CUDA_SUCCESS && p != nullptr, 21);
  // Real pages, every one resident from the allocation, that the host reads and writes.
  CHILD_CHECK(Resident(p, kBytes), 22);
  memset(p, 0x5a, kBytes);
  CHILD_CHECK(static_cast<unsigned char*>(p)[kBytes - 1] == 0x5a, 23);
  // No device memory; host memory of this process for device 0.
  CHILD_CHECK(FreeDeviceBytes() == free_before, 24);
  CHILD_CHECK(Device(state)["used_bytes"] == 0, 25);
  CHILD_CHECK(MyHostBytes(state) == kBytes, 26);
  CHILD_CHECK(Device(state)["host_mapped_bytes"] == kBytes, 27);

  // Unified addressing: the device pointer is the host pointer, inside the allocation too.
  CUdeviceptr dptr = 0;
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, p, 0) == CUDA_SUCCESS, 30);
  CHILD_CHECK(dptr == reinterpret_cast<CUdeviceptr>(p), 31);
  char* inside = static_cast<char*>(p) + 4096 + 3;
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, inside, 0) == CUDA_SUCCESS, 32);
  CHILD_CHECK(dptr == reinterpret_cast<CUdeviceptr>(inside), 33);
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, p, 1) == CUDA_ERROR_INVALID_VALUE, 34);
  int not_pinned = 0;
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, &not_pinned, 0) == CUDA_ERROR_INVALID_VALUE, 35);
  unsigned got_flags = 0;
  CHILD_CHECK(cuMemHostGetFlags(&got_flags, inside) == CUDA_SUCCESS && got_flags == flags, 36);
  CHILD_CHECK(cuMemHostGetFlags(&got_flags, &not_pinned) == CUDA_ERROR_INVALID_VALUE, 37);

  // What the driver answers about the pointer.
  auto ptr = reinterpret_cast<CUdeviceptr>(inside);
  unsigned type = 0;
  CHILD_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) == CUDA_SUCCESS,
              40);
  CHILD_CHECK(type == CU_MEMORYTYPE_HOST, 41);
  CUdeviceptr as_device = 0;
  void* as_host = nullptr;
  CHILD_CHECK(
      cuPointerGetAttribute(&as_device, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr) == CUDA_SUCCESS,
      42);
  CHILD_CHECK(
      cuPointerGetAttribute(&as_host, CU_POINTER_ATTRIBUTE_HOST_POINTER, ptr) == CUDA_SUCCESS, 43);
  CHILD_CHECK(as_device == ptr && as_host == inside, 44);
  CUcontext owner = nullptr, current = nullptr;
  CHILD_CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, ptr) == CUDA_SUCCESS, 45);
  CHILD_CHECK(cuCtxGetCurrent(&current) == CUDA_SUCCESS && owner == current, 46);
  int ordinal = -1;
  CHILD_CHECK(
      cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) == CUDA_SUCCESS,
      47);
  CHILD_CHECK(ordinal == 0, 48);
  CUdeviceptr base = 0;
  size_t size = 0;
  CHILD_CHECK(cuMemGetAddressRange_v2(&base, &size, ptr) == CUDA_SUCCESS, 49);
  CHILD_CHECK(base == reinterpret_cast<CUdeviceptr>(p) && size == kBytes, 50);

  // Device memory has no host pointer.
  CUdeviceptr device_memory = 0;
  CHILD_CHECK(cuMemAlloc_v2(&device_memory, kMiB) == CUDA_SUCCESS, 51);
  CHILD_CHECK(cuPointerGetAttribute(&as_host, CU_POINTER_ATTRIBUTE_HOST_POINTER, device_memory) ==
                  CUDA_ERROR_INVALID_VALUE,
              52);
  CHILD_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device_memory) ==
                      CUDA_SUCCESS &&
                  type == CU_MEMORYTYPE_DEVICE,
              53);
  CHILD_CHECK(cuMemFree_v2(device_memory) == CUDA_SUCCESS, 54);

  // Freed: no longer counted, no longer known.
  CHILD_CHECK(cuMemFreeHost(p) == CUDA_SUCCESS, 60);
  CHILD_CHECK(MyHostBytes(state) == 0, 61);
  CHILD_CHECK(cuMemFreeHost(p) == CUDA_ERROR_INVALID_VALUE, 62);
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, p, 0) == CUDA_ERROR_INVALID_VALUE, 63);

  // cuMemAllocHost is pinned memory too (no flags); a context's pinned memory goes with it.
  void* q = nullptr;
  CHILD_CHECK(cuMemAllocHost_v2(&q, 3 * kMiB + 1) == CUDA_SUCCESS, 70);
  CHILD_CHECK(cuMemHostGetFlags(&got_flags, q) == CUDA_SUCCESS && got_flags == 0, 71);
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  CHILD_CHECK(MyHostBytes(state) == (3 * kMiB + 1 + page - 1) / page * page, 72);
  CHILD_CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS, 73);
  CHILD_CHECK(MyHostBytes(state) == 0, 74);
  return 0;
}

TEST(SimgpuHostMemory, PinnedAllocationIsResidentHostMemoryMappedAtItsAddress) {
  PrivateState state("count=1,memory=1GiB");
  pid_t child = Spawn([&] { return PinnedRoundTrip(state); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
  EXPECT_EQ(Device(state)["host_mapped_bytes"], 0);
}

int BadRequests(PrivateState& state) {
  void* p = nullptr;
  CHILD_CHECK(cuMemHostAlloc(&p, kMiB, 0) == CUDA_ERROR_NOT_INITIALIZED, 20);
  if (int rc = UseDevice(0); rc != 0) return rc;
  CHILD_CHECK(cuMemHostAlloc(&p, kMiB, 0x8) == CUDA_ERROR_INVALID_VALUE, 21);
  CHILD_CHECK(cuMemHostAlloc(&p, kMiB, 0x80000000u) == CUDA_ERROR_INVALID_VALUE, 22);
  CHILD_CHECK(cuMemHostAlloc(&p, 0, 0) == CUDA_ERROR_INVALID_VALUE, 23);
  CHILD_CHECK(cuMemHostAlloc(nullptr, kMiB, 0) == CUDA_ERROR_INVALID_VALUE, 24);
  CHILD_CHECK(cuMemHostAlloc(&p, kMiB, CU_MEMHOSTALLOC_WRITECOMBINED) == CUDA_SUCCESS, 25);
  CHILD_CHECK(cuMemFreeHost(p) == CUDA_SUCCESS, 26);
  int on_stack = 0;
  CHILD_CHECK(cuMemFreeHost(&on_stack) == CUDA_ERROR_INVALID_VALUE, 27);
  CHILD_CHECK(cuMemFreeHost(nullptr) == CUDA_SUCCESS, 28);
  // More than the host has: out of memory, and the process lives on.
  CHILD_CHECK(cuMemHostAlloc(&p, 1ull << 50, 0) == CUDA_ERROR_OUT_OF_MEMORY, 29);
  CHILD_CHECK(MyHostBytes(state) == 0, 30);
  // The kernel refusing the mapping (here the address-space limit) is out of memory too.
  struct rlimit limit = {512 * kMiB * 8, 512 * kMiB * 8};
  CHILD_CHECK(setrlimit(RLIMIT_AS, &limit) == 0, 31);
  CHILD_CHECK(cuMemHostAlloc(&p, 4096 * kMiB, 0) == CUDA_ERROR_OUT_OF_MEMORY, 32);
  CHILD_CHECK(MyHostBytes(state) == 0, 33);
  CHILD_CHECK(cuMemHostAlloc(&p, kMiB, 0) == CUDA_SUCCESS, 34);
  return 0;
}

// The program's own memory, registered: pinned in place (contents kept), counted, reached by
// kernels at host speed, and the program's again once unregistered.
int Registered(PrivateState& state) {
  if (int rc = UseDevice(0); rc != 0) return rc;
  CUmodule mod = nullptr;
  CUfunction touch = nullptr;
  CHILD_CHECK(cuModuleLoadData(&mod, "image") == CUDA_SUCCESS, 20);
  CHILD_CHECK(cuModuleGetFunction(&touch, mod, "touch_1000ns") == CUDA_SUCCESS, 21);
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  constexpr uint64_t kSpan = 8 * kMiB;
  auto* region = static_cast<char*>(
      mmap(nullptr, kSpan, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  CHILD_CHECK(region != MAP_FAILED, 22);
  region[kMiB] = 42;  // one page written before; the rest never touched
  char* p = region + 100;
  constexpr uint64_t kBytes = 6 * kMiB;
  CHILD_CHECK(cuMemHostRegister_v2(p, kBytes, CU_MEMHOSTREGISTER_DEVICEMAP) == CUDA_SUCCESS, 23);
  CHILD_CHECK(Resident(region, (100 + kBytes + page - 1) / page * page), 24);
  CHILD_CHECK(region[kMiB] == 42, 25);
  CHILD_CHECK(MyHostBytes(state) == (100 + kBytes + page - 1) / page * page, 26);
  CHILD_CHECK(Device(state)["used_bytes"] == 0, 27);

  CUdeviceptr dptr = 0;
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, p + 5, 0) == CUDA_SUCCESS, 30);
  CHILD_CHECK(dptr == reinterpret_cast<CUdeviceptr>(p + 5), 31);
  unsigned type = 0, flags = 0;
  CHILD_CHECK(
      cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr) == CUDA_SUCCESS &&
          type == CU_MEMORYTYPE_HOST,
      32);
  CHILD_CHECK(cuMemHostGetFlags(&flags, p) == CUDA_ERROR_INVALID_VALUE, 33);  // not an allocation
  uint64_t bytes = kBytes;
  CUdeviceptr at = reinterpret_cast<CUdeviceptr>(p);
  void* params[] = {&at, &bytes};
  uint64_t before = Device(state)["busy_ns"];
  CHILD_CHECK(cuLaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS,
              34);
  CHILD_CHECK(cuCtxSynchronize() == CUDA_SUCCESS, 35);
  CHILD_CHECK(Device(state)["busy_ns"].get<uint64_t>() - before == 6 * 1000 * 75, 36);

  // Overlaps, frees and unregistrations that do not match.
  CHILD_CHECK(cuMemHostRegister_v2(p + kMiB, kMiB, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              40);
  CHILD_CHECK(cuMemHostRegister_v2(region, 200, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              41);
  void* pinned = nullptr;
  CHILD_CHECK(cuMemHostAlloc(&pinned, kMiB, 0) == CUDA_SUCCESS, 42);
  CHILD_CHECK(cuMemHostRegister_v2(pinned, 4096, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              43);
  CHILD_CHECK(cuMemHostUnregister(pinned) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 44);
  CHILD_CHECK(cuMemFreeHost(pinned) == CUDA_SUCCESS, 45);
  CHILD_CHECK(cuMemFreeHost(p) == CUDA_ERROR_INVALID_VALUE, 46);
  CHILD_CHECK(cuMemHostUnregister(p + 1) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 47);
  CHILD_CHECK(cuMemHostUnregister(p) == CUDA_SUCCESS, 48);
  CHILD_CHECK(MyHostBytes(state) == 0, 49);
  CHILD_CHECK(cuMemHostUnregister(p) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 50);
  region[kSpan - 1] = 7;  // still the program's memory
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&dptr, p, 0) == CUDA_ERROR_INVALID_VALUE, 51);

  // What cannot be registered.
  CHILD_CHECK(
      cuMemHostRegister_v2(p, kMiB, CU_MEMHOSTREGISTER_IOMEMORY) == CUDA_ERROR_NOT_SUPPORTED, 60);
  CHILD_CHECK(cuMemHostRegister_v2(p, kMiB, 0x10) == CUDA_ERROR_INVALID_VALUE, 61);
  CHILD_CHECK(cuMemHostRegister_v2(p, 0, 0) == CUDA_ERROR_INVALID_VALUE, 62);
  CHILD_CHECK(munmap(region + 4 * kMiB, kMiB) == 0, 63);  // a hole in the middle
  CHILD_CHECK(cuMemHostRegister_v2(region, 6 * kMiB, 0) == CUDA_ERROR_INVALID_VALUE, 64);
  CHILD_CHECK(mprotect(region, 2 * kMiB, PROT_READ) == 0, 65);  // read-only: READ_ONLY only
  CHILD_CHECK(cuMemHostRegister_v2(region, 2 * kMiB, 0) == CUDA_ERROR_INVALID_VALUE, 66);
  CHILD_CHECK(cuMemHostRegister_v2(region, 2 * kMiB, CU_MEMHOSTREGISTER_READ_ONLY) == CUDA_SUCCESS,
              67);
  CHILD_CHECK(cuMemHostUnregister(region) == CUDA_SUCCESS, 68);
  CHILD_CHECK(cuMemHostRegister_v2(region, 1ull << 50, 0) == CUDA_ERROR_INVALID_VALUE, 69);

  // The first ABI wants whole pages; its context's end unregisters the range.
  char* high = region + 6 * kMiB;
  CHILD_CHECK(cuMemHostRegister(high + 1, kMiB, 0) == CUDA_ERROR_INVALID_VALUE, 70);
  CHILD_CHECK(cuMemHostRegister(high, kMiB + 1, 0) == CUDA_ERROR_INVALID_VALUE, 71);
  CHILD_CHECK(cuMemHostRegister(high, kMiB, 0) == CUDA_SUCCESS, 72);
  CHILD_CHECK(MyHostBytes(state) == kMiB, 73);
  CHILD_CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS, 74);
  CHILD_CHECK(MyHostBytes(state) == 0, 75);
  high[0] = 1;
  return 0;
}

TEST(SimgpuHostMemory, RegisteredMemoryIsPinnedInPlace) {
  PrivateState state("count=1,memory=1GiB,profile=ideal");
  pid_t child = Spawn([&] { return Registered(state); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
}

TEST(SimgpuHostMemory, BadFlagsAndShortHostMemoryFailCleanly) {
  PrivateState state("count=1,memory=1GiB");
  pid_t child = Spawn([&] { return BadRequests(state); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
}

CUmemAllocationProp PropAt(CUmemLocationType where) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = where;
  prop.location.id = 0;
  return prop;
}

// busy_ns of device 0 once the context's work has ended.
uint64_t SettledBusyNs(PrivateState& state) {
  if (cuCtxSynchronize() != CUDA_SUCCESS) return UINT64_MAX;
  return Device(state)["busy_ns"].get<uint64_t>();
}

// The time of one `touch_1000ns` launch over [ptr, ptr + bytes) on an ideal device, read as the
// busy time it adds; UINT64_MAX when the launch fails.
uint64_t TouchNs(PrivateState& state, CUfunction f, CUdeviceptr ptr, uint64_t bytes) {
  uint64_t before = SettledBusyNs(state);
  void* params[] = {&ptr, &bytes};
  if (cuLaunchKernel(f, 132, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS) {
    return UINT64_MAX;
  }
  return SettledBusyNs(state) - before;
}

int TouchTimes(PrivateState& state, uint64_t slowdown) {
  if (int rc = UseDevice(0); rc != 0) return rc;
  CUmodule mod = nullptr;
  CUfunction f = nullptr;
  CHILD_CHECK(cuModuleLoadData(&mod, "image") == CUDA_SUCCESS, 20);
  CHILD_CHECK(cuModuleGetFunction(&f, mod, "touch_1000ns") == CUDA_SUCCESS, 21);
  constexpr uint64_t kBytes = 64 * kMiB;
  constexpr uint64_t kDeviceNs = 64 * 1000;  // 1000 ns per MiB

  CUdeviceptr device_memory = 0;
  CHILD_CHECK(cuMemAlloc_v2(&device_memory, kBytes) == CUDA_SUCCESS, 22);
  CHILD_CHECK(TouchNs(state, f, device_memory, kBytes) == kDeviceNs, 23);
  CHILD_CHECK(TouchNs(state, f, device_memory + kMiB, kMiB / 2) == 500, 24);  // part of it

  void* pinned = nullptr;
  CHILD_CHECK(cuMemHostAlloc(&pinned, kBytes, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS, 25);
  CUdeviceptr mapped = 0;
  CHILD_CHECK(cuMemHostGetDevicePointer_v2(&mapped, pinned, 0) == CUDA_SUCCESS, 26);
  CHILD_CHECK(TouchNs(state, f, mapped, kBytes) == kDeviceNs * slowdown, 27);

  // One VMM range of a device-located and a host-located handle: each part at its own speed.
  // The host-located one counts as host memory, not device memory.
  uint64_t used_before = Device(state)["used_bytes"];
  uint64_t host_before = MyHostBytes(state);
  CUmemAllocationProp on_device = PropAt(CU_MEM_LOCATION_TYPE_DEVICE);
  CUmemAllocationProp on_host = PropAt(CU_MEM_LOCATION_TYPE_HOST);
  constexpr uint64_t kPart = 8 * kMiB;
  CUmemGenericAllocationHandle hd = 0, hh = 0;
  CHILD_CHECK(cuMemCreate(&hd, kPart, &on_device, 0) == CUDA_SUCCESS, 30);
  CHILD_CHECK(cuMemCreate(&hh, kPart, &on_host, 0) == CUDA_SUCCESS, 31);
  CHILD_CHECK(Device(state)["used_bytes"] == used_before + kPart, 32);
  CHILD_CHECK(MyHostBytes(state) == host_before + kPart, 33);
  CUdeviceptr va = 0;
  CHILD_CHECK(cuMemAddressReserve(&va, 2 * kPart, 0, 0, 0) == CUDA_SUCCESS, 34);
  CHILD_CHECK(cuMemMap(va, kPart, 0, hd, 0) == CUDA_SUCCESS, 35);
  CHILD_CHECK(cuMemMap(va + kPart, kPart, 0, hh, 0) == CUDA_SUCCESS, 36);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHILD_CHECK(cuMemSetAccess(va, 2 * kPart, &access, 1) == CUDA_SUCCESS, 37);
  CHILD_CHECK(TouchNs(state, f, va, 2 * kPart) == 8000 + 8000 * slowdown, 38);

  // Through a captured graph: the same time at each launch.
  CUstream s = nullptr;
  CHILD_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, 40);
  CUgraph g = nullptr;
  CUgraphExec exec = nullptr;
  uint64_t bytes = kBytes;
  void* params[] = {&mapped, &bytes};
  CHILD_CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, 41);
  CHILD_CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS, 42);
  CHILD_CHECK(cuStreamEndCapture(s, &g) == CUDA_SUCCESS, 43);
  CHILD_CHECK(cuGraphInstantiateWithFlags(&exec, g, 0) == CUDA_SUCCESS, 44);
  uint64_t before = SettledBusyNs(state);
  CHILD_CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS, 45);
  CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS, 46);
  CHILD_CHECK(SettledBusyNs(state) - before == kDeviceNs * slowdown, 47);

  // Without its two arguments: refused, not a fault, and the context lives on.
  uint64_t short_buffer = mapped;
  size_t short_size = sizeof(short_buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &short_buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &short_size, CU_LAUNCH_PARAM_END};
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE,
      50);
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra) == CUDA_ERROR_INVALID_VALUE,
      51);
  // The `extra` form with both values.
  struct {
    CUdeviceptr ptr;
    uint64_t bytes;
  } buffer{device_memory, kBytes};
  size_t size = sizeof(buffer);
  void* full[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                  CU_LAUNCH_PARAM_END};
  before = SettledBusyNs(state);
  CHILD_CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, full) == CUDA_SUCCESS, 53);
  CHILD_CHECK(SettledBusyNs(state) - before == kDeviceNs, 54);
  return 0;
}

TEST(SimgpuTouch, HostMemoryTakesTheHostSlowdownTimesLonger) {
  PrivateState state("count=1,sms=132,memory=1GiB,profile=ideal");
  pid_t child = Spawn([&] { return TouchTimes(state, 75); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
  EXPECT_EQ(Device(state)["host_slowdown"], 75);
}

TEST(SimgpuTouch, HostSlowdownIsTheMachines) {
  PrivateState state("count=1,sms=132,memory=1GiB,profile=ideal,hostslow=12");
  pid_t child = Spawn([&] { return TouchTimes(state, 12); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
  EXPECT_EQ(Device(state)["host_slowdown"], 12);
}

// Launches touch_1000ns over [ptr, ptr + bytes) on the legacy stream.
CUresult Touch(CUfunction f, CUdeviceptr ptr, uint64_t bytes) {
  void* params[] = {&ptr, &bytes};
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
}

// A fresh primary context of device `ordinal` with touch_1000ns loaded in it.
int FreshContext(int ordinal, CUfunction* f) {
  if (int rc = UseDevice(ordinal); rc != 0) return rc;
  CUmodule mod = nullptr;
  if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 13;
  return cuModuleGetFunction(f, mod, "touch_1000ns") == CUDA_SUCCESS ? 0 : 14;
}

// Each bad range breaks the context for good: the launch, and every later call in the context,
// fail with CUDA_ERROR_ILLEGAL_ADDRESS; a reset primary context works again.
int IllegalAddresses(PrivateState& state) {
  CUfunction f = nullptr;
  if (int rc = FreshContext(0, &f); rc != 0) return rc;
  CUdeviceptr a = 0;
  CHILD_CHECK(cuMemAlloc_v2(&a, 4 * kMiB) == CUDA_SUCCESS, 20);
  uint64_t busy = SettledBusyNs(state);
  CHILD_CHECK(Touch(f, a, 4 * kMiB) == CUDA_SUCCESS, 21);  // the whole allocation: fine
  CHILD_CHECK(SettledBusyNs(state) == busy + 4000, 22);
  CHILD_CHECK(Touch(f, a, 4 * kMiB + 1) == CUDA_ERROR_ILLEGAL_ADDRESS, 23);  // one byte past it
  CHILD_CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS, 24);
  CUdeviceptr b = 0;
  CHILD_CHECK(cuMemAlloc_v2(&b, kMiB) == CUDA_ERROR_ILLEGAL_ADDRESS, 25);
  CHILD_CHECK(Touch(f, a, kMiB) == CUDA_ERROR_ILLEGAL_ADDRESS, 26);
  CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_ERROR_ILLEGAL_ADDRESS, 27);
  CHILD_CHECK(Device(state)["busy_ns"] == busy + 4000, 28);  // nothing more ran
  CHILD_CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS, 29);

  // Host memory the driver never pinned; a freed allocation; a VMM mapping without the device's
  // access; memory of another device without peer access.
  const std::pair<const char*, std::function<CUdeviceptr()>> cases[] = {
      {"malloc'ed memory",
       []() -> CUdeviceptr {
         static std::vector<char> plain(kMiB);
         return reinterpret_cast<CUdeviceptr>(plain.data());
       }},
      {"a freed allocation",
       []() -> CUdeviceptr {
         CUdeviceptr p = 0;
         if (cuMemAlloc_v2(&p, kMiB) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS) return 0;
         return p;
       }},
      {"a mapping without access",
       []() -> CUdeviceptr {
         CUmemAllocationProp prop = PropAt(CU_MEM_LOCATION_TYPE_HOST);
         CUmemGenericAllocationHandle h = 0;
         CUdeviceptr va = 0;
         if (cuMemCreate(&h, 2 * kMiB, &prop, 0) != CUDA_SUCCESS ||
             cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0) != CUDA_SUCCESS ||
             cuMemMap(va, 2 * kMiB, 0, h, 0) != CUDA_SUCCESS) {
           return 0;
         }
         return va;
       }},
      {"device 1's memory",
       []() -> CUdeviceptr {
         CUcontext mine = nullptr, other = nullptr;
         CUdeviceptr p = 0;
         if (cuCtxGetCurrent(&mine) != CUDA_SUCCESS ||
             cuDevicePrimaryCtxRetain(&other, 1) != CUDA_SUCCESS ||
             cuCtxSetCurrent(other) != CUDA_SUCCESS || cuMemAlloc_v2(&p, kMiB) != CUDA_SUCCESS ||
             cuCtxSetCurrent(mine) != CUDA_SUCCESS) {
           return 0;
         }
         return p;
       }},
  };
  int code = 30;
  for (const auto& [what, make] : cases) {
    if (int rc = FreshContext(0, &f); rc != 0) return rc;
    CUdeviceptr p = make();
    if (p == 0 || Touch(f, p, kMiB) != CUDA_ERROR_ILLEGAL_ADDRESS ||
        cuCtxSynchronize() != CUDA_ERROR_ILLEGAL_ADDRESS) {
      fprintf(stderr, "touching %s did not fault\n", what);
      return code;
    }
    CHILD_CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS, code + 1);
    code += 2;
  }

  // With peer access, device 1's memory is reachable.
  if (int rc = FreshContext(0, &f); rc != 0) return rc;
  CUcontext mine = nullptr, other = nullptr;
  CUdeviceptr remote = 0;
  CHILD_CHECK(cuCtxGetCurrent(&mine) == CUDA_SUCCESS, 50);
  CHILD_CHECK(cuDevicePrimaryCtxRetain(&other, 1) == CUDA_SUCCESS, 51);
  CHILD_CHECK(cuCtxSetCurrent(other) == CUDA_SUCCESS, 52);
  CHILD_CHECK(cuMemAlloc_v2(&remote, kMiB) == CUDA_SUCCESS, 53);
  CHILD_CHECK(cuCtxSetCurrent(mine) == CUDA_SUCCESS, 54);
  CHILD_CHECK(cuCtxEnablePeerAccess(other, 0) == CUDA_SUCCESS, 55);
  CHILD_CHECK(Touch(f, remote, kMiB) == CUDA_SUCCESS, 56);
  CHILD_CHECK(cuCtxSynchronize() == CUDA_SUCCESS, 57);
  return 0;
}

TEST(SimgpuTouch, OutsideAddressableMemoryIsAStickyIllegalAddress) {
  PrivateState state("count=2,memory=1GiB,profile=ideal");
  pid_t child = Spawn([&] { return IllegalAddresses(state); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
}

// One process holds most of the device; another cannot allocate past what is left, whatever host
// memory it pins, and can once the first has gone.
TEST(SimgpuHostMemory, DeviceMemoryStaysEnforcedAcrossProcesses) {
  PrivateState state("count=1,memory=1GiB");
  int go[2], held[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(held), 0);
  pid_t holder = Spawn([&] {
    if (UseDevice(0) != 0) return 10;
    CUdeviceptr p = 0;
    if (cuMemAlloc_v2(&p, 768 * kMiB) != CUDA_SUCCESS) return 11;
    char c = 1;
    if (write(held[1], &c, 1) != 1) return 12;
    return read(go[0], &c, 1) == 1 ? 0 : 13;  // holds the memory until told
  });
  ChildGuard holder_guard(holder);
  char c = 0;
  ASSERT_EQ(read(held[0], &c, 1), 1);

  pid_t other = Spawn([&] {
    if (UseDevice(0) != 0) return 10;
    CUdeviceptr p = 0;
    CHILD_CHECK(cuMemAlloc_v2(&p, 512 * kMiB) == CUDA_ERROR_OUT_OF_MEMORY, 20);
    void* pinned = nullptr;  // host memory takes none of the device's
    CHILD_CHECK(cuMemHostAlloc(&pinned, 512 * kMiB, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS, 21);
    CHILD_CHECK(cuMemAlloc_v2(&p, 256 * kMiB) == CUDA_SUCCESS, 22);  // exactly what is left
    CUdeviceptr q = 0;
    CHILD_CHECK(cuMemAlloc_v2(&q, 1) == CUDA_ERROR_OUT_OF_MEMORY, 23);
    CHILD_CHECK(Device(state)["used_bytes"] == 1024 * kMiB, 24);
    CHILD_CHECK(MyHostBytes(state) == 512 * kMiB, 25);
    return 0;
  });
  ChildGuard other_guard(other);
  ASSERT_EQ(other_guard.Reap(), 0);
  ASSERT_EQ(write(go[1], &c, 1), 1);
  ASSERT_EQ(holder_guard.Reap(), 0);

  pid_t later = Spawn([&] {
    if (UseDevice(0) != 0) return 10;
    CUdeviceptr p = 0;
    CHILD_CHECK(cuMemAlloc_v2(&p, 1024 * kMiB) == CUDA_SUCCESS, 20);
    return 0;
  });
  ChildGuard later_guard(later);
  EXPECT_EQ(later_guard.Reap(), 0);
  EXPECT_EQ(Device(state)["host_mapped_bytes"], 0);
  for (int fd : {go[0], go[1], held[0], held[1]}) close(fd);
}

}  // namespace
}  // namespace simgpu::testing
