// The older-ABI entry points (see legacy_abi.h), each forwarding to the current one.
#include "legacy_abi.h"

#include <climits>

#include "graph_ops.h"

extern "C" {

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t total = 0;
  CUresult r = cuDeviceTotalMem_v2(&total, dev);
  if (r == CUDA_SUCCESS) *bytes = total > UINT_MAX ? UINT_MAX : static_cast<unsigned>(total);
  return r;
}

CUresult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t f = 0, t = 0;
  CUresult r = cuMemGetInfo_v2(&f, &t);
  if (r != CUDA_SUCCESS) return r;
  *free_bytes = f > UINT_MAX ? UINT_MAX : static_cast<unsigned>(f);
  *total = t > UINT_MAX ? UINT_MAX : static_cast<unsigned>(t);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v2(pctx, flags, dev);
}
CUresult cuCtxDestroy(CUcontext ctx) {
  return cuCtxDestroy_v2(ctx);
}
CUresult cuCtxPopCurrent(CUcontext* pctx) {
  return cuCtxPopCurrent_v2(pctx);
}
CUresult cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxPushCurrent_v2(ctx);
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return cuDevicePrimaryCtxReset_v2(dev);
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
CUresult cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}
CUresult cuEventDestroy(CUevent hEvent) {
  return cuEventDestroy_v2(hEvent);
}

CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                              const CUgraphNode* dependencies, size_t numDependencies,
                              const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return simgpu::AddKernelNode(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->func,
                               simgpu::ShapeOf(*nodeParams), simgpu::ArgsOf(*nodeParams));
}

CUresult cuStreamBeginCapture(CUstream hStream) {
  return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                            char* logBuffer, size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                               char* logBuffer, size_t bufferSize) {
  return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

}  // extern "C"
