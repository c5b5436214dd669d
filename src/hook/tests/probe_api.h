// The driver and NVML entry points the hook test programs call, gathered in one table so that
// every scenario runs the same way through both routes a program can take to the driver:
//   direct:  symbols linked from libcuda.so.1 / libnvidia-ml.so.1 (symbol interposition);
//   runtime: dlopen + dlsym("cuGetProcAddress_v2") + cuGetProcAddress_v2(name, version, flags),
//            the way the CUDA 13 runtime does, optionally with the per-thread-stream flag (then
//            at version 7000 or later, as a runtime asks: the variants came with CUDA 7.0).
// Thread-safety: the table is filled once, before use, and read-only afterwards.
#ifndef TESSERA_HOOK_TESTS_PROBE_API_H_
#define TESSERA_HOOK_TESTS_PROBE_API_H_

#include <string>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"

#undef nvmlDeviceGetComputeRunningProcesses  // the table names the v1 symbol too

namespace tessera::hooktest {

// X(field, symbol for the direct route, name for cuGetProcAddress, version CUDA 13 asks for)
#define PROBE_CUDA_API(X)                                                                         \
  X(Init, cuInit, "cuInit", 2000)                                                                 \
  X(DeviceGet, cuDeviceGet, "cuDeviceGet", 2000)                                                  \
  X(DeviceTotalMem, cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020)                                \
  X(DeviceGetUuid, cuDeviceGetUuid_v2, "cuDeviceGetUuid", 11040)                                  \
  X(DeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020)       \
  X(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000)                 \
  X(PrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000)          \
  X(PrimaryCtxReset, cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000)                \
  X(CtxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent", 4000)                                      \
  X(CtxCreate, cuCtxCreate_v2, "cuCtxCreate", 3020)                                               \
  X(CtxDestroy, cuCtxDestroy_v2, "cuCtxDestroy", 4000)                                            \
  X(CtxGetDevice, cuCtxGetDevice_v2, "cuCtxGetDevice", 13000)                                     \
  X(CtxSetLimit, cuCtxSetLimit, "cuCtxSetLimit", 3010)                                            \
  X(MemGetInfo, cuMemGetInfo_v2, "cuMemGetInfo", 3020)                                            \
  X(MemAlloc, cuMemAlloc_v2, "cuMemAlloc", 3020)                                                  \
  X(MemAllocPitch, cuMemAllocPitch_v2, "cuMemAllocPitch", 3020)                                   \
  X(MemAllocManaged, cuMemAllocManaged, "cuMemAllocManaged", 6000)                                \
  X(MemFree, cuMemFree_v2, "cuMemFree", 3020)                                                     \
  X(MemAllocAsync, cuMemAllocAsync, "cuMemAllocAsync", 11020)                                     \
  X(MemAllocFromPoolAsync, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020)             \
  X(MemFreeAsync, cuMemFreeAsync, "cuMemFreeAsync", 11020)                                        \
  X(MemPoolCreate, cuMemPoolCreate, "cuMemPoolCreate", 11020)                                     \
  X(MemPoolDestroy, cuMemPoolDestroy, "cuMemPoolDestroy", 11020)                                  \
  X(MemPoolTrimTo, cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020)                                     \
  X(MemPoolSetAttribute, cuMemPoolSetAttribute, "cuMemPoolSetAttribute", 11020)                   \
  X(MemPoolGetAttribute, cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 11020)                   \
  X(MemCreate, cuMemCreate, "cuMemCreate", 10020)                                                 \
  X(MemRelease, cuMemRelease, "cuMemRelease", 10020)                                              \
  X(MemAddressReserve, cuMemAddressReserve, "cuMemAddressReserve", 10020)                         \
  X(MemAddressFree, cuMemAddressFree, "cuMemAddressFree", 10020)                                  \
  X(MemMap, cuMemMap, "cuMemMap", 10020)                                                          \
  X(MemUnmap, cuMemUnmap, "cuMemUnmap", 10020)                                                    \
  X(ArrayCreate, cuArrayCreate_v2, "cuArrayCreate", 3020)                                         \
  X(Array3DCreate, cuArray3DCreate_v2, "cuArray3DCreate", 3020)                                   \
  X(ArrayDestroy, cuArrayDestroy, "cuArrayDestroy", 2000)                                         \
  X(MipmappedArrayCreate, cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000)                 \
  X(MipmappedArrayDestroy, cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000)              \
  X(StreamSynchronize, cuStreamSynchronize, "cuStreamSynchronize", 2000)                          \
  X(StreamCreate, cuStreamCreate, "cuStreamCreate", 2000)                                         \
  X(StreamDestroy, cuStreamDestroy_v2, "cuStreamDestroy", 4000)                                   \
  X(StreamBeginCapture, cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010)                   \
  X(StreamEndCapture, cuStreamEndCapture, "cuStreamEndCapture", 10000)                            \
  X(GraphCreate, cuGraphCreate, "cuGraphCreate", 10000)                                           \
  X(GraphDestroy, cuGraphDestroy, "cuGraphDestroy", 10000)                                        \
  X(GraphAddMemAllocNode, cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", 11040)                \
  X(GraphInstantiate, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040)          \
  X(GraphExecDestroy, cuGraphExecDestroy, "cuGraphExecDestroy", 10000)                            \
  X(GraphLaunch, cuGraphLaunch, "cuGraphLaunch", 10000)                                           \
  X(DeviceGraphMemTrim, cuDeviceGraphMemTrim, "cuDeviceGraphMemTrim", 11040)                      \
  X(MemsetD8, cuMemsetD8_v2, "cuMemsetD8", 3020)                                                  \
  X(MemsetD8Async, cuMemsetD8Async, "cuMemsetD8Async", 3020)                                      \
  X(MemcpyDtoD, cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020)                                            \
  X(MemGetAddressRange, cuMemGetAddressRange_v2, "cuMemGetAddressRange", 3020)                    \
  X(EventCreate, cuEventCreate, "cuEventCreate", 2000)                                            \
  X(EventRecord, cuEventRecord, "cuEventRecord", 2000)                                            \
  X(EventSynchronize, cuEventSynchronize, "cuEventSynchronize", 2000)                             \
  X(EventDestroy, cuEventDestroy_v2, "cuEventDestroy", 4000)                                      \
  X(StreamWaitEvent, cuStreamWaitEvent, "cuStreamWaitEvent", 3020)                                \
  X(IpcGetMemHandle, cuIpcGetMemHandle, "cuIpcGetMemHandle", 4010)                                \
  X(IpcOpenMemHandle, cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle", 11000)                         \
  X(IpcCloseMemHandle, cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010)                          \
  X(IpcGetEventHandle, cuIpcGetEventHandle, "cuIpcGetEventHandle", 4010)                          \
  X(IpcOpenEventHandle, cuIpcOpenEventHandle, "cuIpcOpenEventHandle", 4010)                       \
  X(PointerGetAttribute, cuPointerGetAttribute, "cuPointerGetAttribute", 4000)                    \
  X(CtxSynchronize, cuCtxSynchronize, "cuCtxSynchronize", 2000)                                   \
  X(MemGetAllocationGranularity, cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity",  \
    10020)                                                                                        \
  X(MemSetAccess, cuMemSetAccess, "cuMemSetAccess", 10020)                                        \
  X(MemExportToShareableHandle, cuMemExportToShareableHandle, "cuMemExportToShareableHandle",     \
    10020)                                                                                        \
  X(MemImportFromShareableHandle, cuMemImportFromShareableHandle,                                 \
    "cuMemImportFromShareableHandle", 10020)                                                      \
  X(MemRetainAllocationHandle, cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", 11000) \
  X(ImportExternalMemory, cuImportExternalMemory, "cuImportExternalMemory", 10000)                \
  X(ExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedBuffer,                               \
    "cuExternalMemoryGetMappedBuffer", 10000)                                                     \
  X(DestroyExternalMemory, cuDestroyExternalMemory, "cuDestroyExternalMemory", 10000)             \
  X(ImportExternalSemaphore, cuImportExternalSemaphore, "cuImportExternalSemaphore", 10000)       \
  X(SignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync,                               \
    "cuSignalExternalSemaphoresAsync", 10000)                                                     \
  X(WaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync, "cuWaitExternalSemaphoresAsync",  \
    10000)                                                                                        \
  X(DestroyExternalSemaphore, cuDestroyExternalSemaphore, "cuDestroyExternalSemaphore", 10000)    \
  X(MemGetAllocationPropertiesFromHandle, cuMemGetAllocationPropertiesFromHandle,                 \
    "cuMemGetAllocationPropertiesFromHandle", 10020)                                              \
  X(ModuleLoadData, cuModuleLoadData, "cuModuleLoadData", 2000)                                   \
  X(ModuleGetFunction, cuModuleGetFunction, "cuModuleGetFunction", 2000)                          \
  X(LaunchKernel, cuLaunchKernel, "cuLaunchKernel", 4000)                                         \
  X(DeviceCanAccessPeer, cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 4000)                    \
  X(DeviceGetAttribute, cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000)                       \
  X(MulticastCreate, cuMulticastCreate, "cuMulticastCreate", 12010)                               \
  X(MulticastAddDevice, cuMulticastAddDevice, "cuMulticastAddDevice", 12010)                      \
  X(MulticastBindMem, cuMulticastBindMem, "cuMulticastBindMem", 12010)                            \
  X(MulticastUnbind, cuMulticastUnbind, "cuMulticastUnbind", 12010)                               \
  X(MulticastGetGranularity, cuMulticastGetGranularity, "cuMulticastGetGranularity", 12010)

#define PROBE_NVML_API(X)                                                                          \
  X(NvmlInit, nvmlInit_v2, "nvmlInit_v2")                                                          \
  X(NvmlHandleByIndex, nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2")             \
  X(NvmlHandleByUuid, nvmlDeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID")                      \
  X(NvmlMemoryInfo, nvmlDeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo")                            \
  X(NvmlMemoryInfoV2, nvmlDeviceGetMemoryInfo_v2, "nvmlDeviceGetMemoryInfo_v2")                    \
  X(NvmlProcesses, nvmlDeviceGetComputeRunningProcesses_v3,                                        \
    "nvmlDeviceGetComputeRunningProcesses_v3")                                                     \
  X(NvmlProcessesV1, nvmlDeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses") \
  X(NvmlGraphicsProcesses, nvmlDeviceGetGraphicsRunningProcesses_v3,                               \
    "nvmlDeviceGetGraphicsRunningProcesses_v3")                                                    \
  X(NvmlProcessUtilization, nvmlDeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization")    \
  X(NvmlP2PStatus, nvmlDeviceGetP2PStatus, "nvmlDeviceGetP2PStatus")

struct Api {
#define PROBE_FIELD(field, symbol, ...) decltype(&symbol) field = nullptr;
  PROBE_CUDA_API(PROBE_FIELD)
  PROBE_NVML_API(PROBE_FIELD)
#undef PROBE_FIELD
};

// Fills `api` for `route` ("direct", "runtime" or "runtime-ptds"). Returns an empty string, or
// what could not be resolved ("not resolved: cuX (rc R, status S) ...", with cuGetProcAddress_v2's
// result and status for each name).
std::string LoadApi(const std::string& route, Api* api);

}  // namespace tessera::hooktest

#endif  // TESSERA_HOOK_TESTS_PROBE_API_H_
