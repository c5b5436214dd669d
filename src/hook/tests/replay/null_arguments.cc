// The calls the library hooks, made with the NULL, zero and invalid arguments programs pass by
// mistake or on purpose (HAMi-core#321: its library crashed where the driver answers an error).
// Each answer is recorded, not judged: the test requires the same answers bare and under the
// library, and that the process survives them all. The valid calls around them (a context, a
// device memory info) keep the library active.
#include <cstring>

#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

int NullArguments(Rank&, Calls& calls) {
  const hooktest::Api& api = calls.api();
  calls.Answer("cuMemGetInfo before cuInit", api.MemGetInfo(nullptr, nullptr));
  if (!UseDevice(calls, 0)) return 1;
  size_t free = 0, total = 0, pitch = 0;
  CUdeviceptr p = 0;
  calls.Answer("cuMemGetInfo(NULL, NULL)", api.MemGetInfo(nullptr, nullptr));
  calls.Answer("cuMemGetInfo(&free, NULL)", api.MemGetInfo(&free, nullptr));
  calls.Answer("cuMemGetInfo(NULL, &total)", api.MemGetInfo(nullptr, &total));
  calls.Answer("cuDeviceTotalMem(NULL)", api.DeviceTotalMem(nullptr, 0));
  calls.Answer("cuDeviceTotalMem(bad device)", api.DeviceTotalMem(&total, 99));
  calls.Answer("cuMemAlloc(NULL)", api.MemAlloc(nullptr, 1 << 20));
  calls.Answer("cuMemAlloc(0 bytes)", api.MemAlloc(&p, 0));
  calls.Answer("cuMemAllocPitch(NULL)", api.MemAllocPitch(nullptr, &pitch, 1024, 16, 4));
  calls.Answer("cuMemAllocPitch(NULL pitch)", api.MemAllocPitch(&p, nullptr, 1024, 16, 4));
  calls.Answer("cuMemAllocPitch(0 x 0)", api.MemAllocPitch(&p, &pitch, 0, 0, 4));
  calls.Answer("cuMemAllocPitch(element 3)", api.MemAllocPitch(&p, &pitch, 1024, 16, 3));
  calls.Answer("cuMemAllocManaged(NULL)",
               api.MemAllocManaged(nullptr, 1 << 20, CU_MEM_ATTACH_GLOBAL));
  calls.Answer("cuMemAllocManaged(0 bytes)", api.MemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL));
  calls.Answer("cuMemFree(0)", api.MemFree(0));
  calls.Answer("cuMemFree(never allocated)", api.MemFree(0x7000));
  calls.Answer("cuMemAllocAsync(NULL)", api.MemAllocAsync(nullptr, 1 << 20, nullptr));
  calls.Answer("cuMemAllocAsync(0 bytes)", api.MemAllocAsync(&p, 0, nullptr));
  calls.Answer("cuMemAllocFromPoolAsync(NULL pool)",
               api.MemAllocFromPoolAsync(&p, 1 << 20, nullptr, nullptr));
  calls.Answer("cuMemFreeAsync(0)", api.MemFreeAsync(0, nullptr));
  CUmemoryPool pool = nullptr;
  CUmemPoolProps props{};
  calls.Answer("cuMemPoolCreate(NULL)", api.MemPoolCreate(nullptr, &props));
  calls.Answer("cuMemPoolCreate(NULL props)", api.MemPoolCreate(&pool, nullptr));
  calls.Answer("cuMemPoolCreate(empty props)", api.MemPoolCreate(&pool, &props));
  calls.Answer("cuMemPoolDestroy(NULL)", api.MemPoolDestroy(nullptr));
  calls.Answer("cuMemPoolTrimTo(NULL)", api.MemPoolTrimTo(nullptr, 0));
  calls.Answer("cuDeviceGetDefaultMemPool(NULL)", api.DeviceGetDefaultMemPool(nullptr, 0));
  CUarray array = nullptr;
  CUDA_ARRAY_DESCRIPTOR desc{};
  CUDA_ARRAY3D_DESCRIPTOR desc3{};
  CUmipmappedArray mipmap = nullptr;
  calls.Answer("cuArrayCreate(NULL)", api.ArrayCreate(nullptr, &desc));
  calls.Answer("cuArrayCreate(NULL desc)", api.ArrayCreate(&array, nullptr));
  calls.Answer("cuArrayCreate(empty desc)", api.ArrayCreate(&array, &desc));
  calls.Answer("cuArray3DCreate(NULL desc)", api.Array3DCreate(&array, nullptr));
  calls.Answer("cuArrayDestroy(NULL)", api.ArrayDestroy(nullptr));
  calls.Answer("cuMipmappedArrayCreate(NULL desc)", api.MipmappedArrayCreate(&mipmap, nullptr, 1));
  calls.Answer("cuMipmappedArrayCreate(0 levels)", api.MipmappedArrayCreate(&mipmap, &desc3, 0));
  calls.Answer("cuMipmappedArrayDestroy(NULL)", api.MipmappedArrayDestroy(nullptr));
  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  calls.Answer("cuMemCreate(NULL)", api.MemCreate(nullptr, 2 << 20, &prop, 0));
  calls.Answer("cuMemCreate(0 bytes)", api.MemCreate(&handle, 0, &prop, 0));
  calls.Answer("cuMemCreate(NULL prop)", api.MemCreate(&handle, 2 << 20, nullptr, 0));
  CUmemAllocationProp bad_device = prop;
  bad_device.location.id = 99;
  calls.Answer("cuMemCreate(bad device)", api.MemCreate(&handle, 2 << 20, &bad_device, 0));
  calls.Answer("cuMemRelease(0)", api.MemRelease(0));
  calls.Answer("cuMemMap(0)", api.MemMap(0, 0, 0, 0, 0));
  calls.Answer("cuMemUnmap(0)", api.MemUnmap(0, 0));
  calls.Answer("cuMemRetainAllocationHandle(NULL, NULL)",
               api.MemRetainAllocationHandle(nullptr, nullptr));
  calls.Answer("cuMemRetainAllocationHandle(NULL address)",
               api.MemRetainAllocationHandle(&handle, nullptr));
  CUcontext ctx = nullptr;
  calls.Answer("cuCtxCreate(NULL)", api.CtxCreate(nullptr, 0, 0));
  calls.Answer("cuCtxCreate(bad device)", api.CtxCreate(&ctx, 0, 99));
  calls.Answer("cuDevicePrimaryCtxRetain(NULL)", api.PrimaryCtxRetain(nullptr, 0));
  calls.Answer("cuDevicePrimaryCtxRetain(bad device)", api.PrimaryCtxRetain(&ctx, 99));
  calls.Answer("cuCtxDestroy(NULL)", api.CtxDestroy(nullptr));
  calls.Answer("cuCtxSetLimit(unknown limit)", api.CtxSetLimit(static_cast<CUlimit>(0x7f), 0));
  calls.Answer("cuLaunchKernel(NULL)",
               api.LaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  calls.Answer("cuStreamEndCapture(legacy, NULL)", api.StreamEndCapture(nullptr, nullptr));
  calls.Answer("cuGraphInstantiate(NULL)", api.GraphInstantiate(nullptr, nullptr, 0));
  calls.Answer("cuGraphExecDestroy(NULL)", api.GraphExecDestroy(nullptr));
  calls.Answer("cuGraphLaunch(NULL)", api.GraphLaunch(nullptr, nullptr));
  nvmlDevice_t device = nullptr;
  calls.Note("nvmlInit", api.NvmlInit());
  calls.Note("nvmlDeviceGetHandleByIndex", api.NvmlHandleByIndex(0, &device));
  calls.Answer("nvmlDeviceGetMemoryInfo(NULL)", api.NvmlMemoryInfo(device, nullptr));
  calls.Answer("nvmlDeviceGetMemoryInfo_v2(NULL)", api.NvmlMemoryInfoV2(device, nullptr));
  calls.Answer("nvmlDeviceGetMemoryInfo(NULL device)", api.NvmlMemoryInfo(nullptr, nullptr));
  calls.Answer("nvmlDeviceGetComputeRunningProcesses_v3(NULL count)",
               api.NvmlProcesses(device, nullptr, nullptr));
  unsigned count = 0;
  calls.Answer("nvmlDeviceGetComputeRunningProcesses_v3(size query)",
               api.NvmlProcesses(device, &count, nullptr));
  calls.Answer("nvmlDeviceGetProcessUtilization(NULL count)",
               api.NvmlProcessUtilization(device, nullptr, nullptr, 0));
  calls.Note("cuMemGetInfo", api.MemGetInfo(&free, &total));  // still the library's view
  return 0;
}

}  // namespace tessera::replay
