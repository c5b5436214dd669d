// Prints, as C++ static_asserts, a sample of enum values, struct sizes and member offsets as
// Tessera's own driver header (src/abi/cuda_driver.h) declares them. cuda_h_crosscheck.sh compiles
// the output against NVIDIA's cuda.h, so any difference between the two fails to compile.
#include <cstddef>
#include <cstdio>

#include "abi/cuda_driver.h"

#define VALUE(name)                                                                            \
  printf("static_assert(%s == %lld, \"value of %s\");\n", #name, static_cast<long long>(name), \
         #name)
#define SIZE(type) \
  printf("static_assert(sizeof(%s) == %zu, \"size of %s\");\n", #type, sizeof(type), #type)
#define OFFSET(type, member)                                                               \
  printf("static_assert(offsetof(%s, %s) == %zu, \"offset of %s.%s\");\n", #type, #member, \
         offsetof(type, member), #type, #member)

int main() {
  printf("#include <cstddef>\n#include <cuda.h>\n");
  VALUE(CUDA_ERROR_INVALID_VALUE);
  VALUE(CUDA_ERROR_OUT_OF_MEMORY);
  VALUE(CUDA_ERROR_NOT_INITIALIZED);
  VALUE(CUDA_ERROR_STUB_LIBRARY);
  VALUE(CUDA_ERROR_DEVICE_UNAVAILABLE);
  VALUE(CUDA_ERROR_NO_DEVICE);
  VALUE(CUDA_ERROR_INVALID_DEVICE);
  VALUE(CUDA_ERROR_INVALID_CONTEXT);
  VALUE(CUDA_ERROR_ALREADY_MAPPED);
  VALUE(CUDA_ERROR_NOT_MAPPED);
  VALUE(CUDA_ERROR_FILE_NOT_FOUND);
  VALUE(CUDA_ERROR_OPERATING_SYSTEM);
  VALUE(CUDA_ERROR_INVALID_HANDLE);
  VALUE(CUDA_ERROR_ILLEGAL_STATE);
  VALUE(CUDA_ERROR_NOT_FOUND);
  VALUE(CUDA_ERROR_NOT_READY);
  VALUE(CUDA_ERROR_LAUNCH_FAILED);
  VALUE(CUDA_ERROR_NOT_SUPPORTED);
  VALUE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  VALUE(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  VALUE(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  VALUE(CUDA_ERROR_UNKNOWN);
  VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  VALUE(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  VALUE(CU_AD_FORMAT_HALF);
  VALUE(CU_AD_FORMAT_FLOAT);
  VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
  VALUE(CU_MEM_LOCATION_TYPE_HOST);
  VALUE(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
  VALUE(CU_MEM_ALLOCATION_TYPE_PINNED);
  VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  VALUE(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  VALUE(CU_STREAM_CAPTURE_MODE_RELAXED);
  VALUE(CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  VALUE(CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  VALUE(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  VALUE(CU_STREAM_NON_BLOCKING);
  VALUE(CU_EVENT_DISABLE_TIMING);
  VALUE(CU_MEM_ATTACH_GLOBAL);
  SIZE(CUuuid);
  SIZE(CUDA_ARRAY_DESCRIPTOR);
  SIZE(CUDA_ARRAY3D_DESCRIPTOR);
  SIZE(CUmemLocation);
  SIZE(CUmemAllocationProp);
  SIZE(CUmemAccessDesc);
  SIZE(CUmemPoolProps);
  SIZE(CUlaunchAttribute);
  SIZE(CUlaunchConfig);
  SIZE(CUDA_LAUNCH_PARAMS);
  SIZE(CUDA_KERNEL_NODE_PARAMS_v1);
  SIZE(CUDA_KERNEL_NODE_PARAMS_v2);
  SIZE(CUctxCreateParams);
  OFFSET(CUmemAllocationProp, allocFlags);
  OFFSET(CUmemPoolProps, maxSize);
  OFFSET(CUmemPoolProps, usage);
  OFFSET(CUlaunchConfig, hStream);
  OFFSET(CUlaunchConfig, numAttrs);
  OFFSET(CUDA_LAUNCH_PARAMS, kernelParams);
  OFFSET(CUDA_KERNEL_NODE_PARAMS_v2, kern);
  OFFSET(CUDA_KERNEL_NODE_PARAMS_v2, ctx);
  OFFSET(CUDA_ARRAY3D_DESCRIPTOR, Flags);
  return 0;
}
