// Entry points of older ABIs that cuda_driver.h hides behind its macros (cuMemGetInfo means
// cuMemGetInfo_v2 there). simgpu exports them under their real symbol names so that
// cuGetProcAddress can hand an old-version caller the old function, as the real driver does.
// A file that includes this header sees these names as the old functions, not as the macros.
// Plain C declarations; no state.
#pragma once

#include "abi/cuda_driver.h"

#undef cuDeviceTotalMem
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuMemGetInfo
#undef cuGraphAddKernelNode
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#undef cuGetProcAddress
#undef cuIpcOpenMemHandle

extern "C" {
CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev);
CUresult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total);
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuCtxPopCurrent(CUcontext* pctx);
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);  // pages aligned
CUresult cuCtxPushCurrent(CUcontext ctx);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuEventDestroy(CUevent hEvent);
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                              const CUgraphNode* dependencies, size_t numDependencies,
                              const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                            char* logBuffer, size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                               char* logBuffer, size_t bufferSize);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                          unsigned long long flags);
}
