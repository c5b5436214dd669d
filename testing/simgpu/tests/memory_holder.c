/* A small CUDA program for the driver daemon's test: allocates MIB MiB on device 0, runs one
 * busy_<KERNEL_US>us kernel to the end, prints "ready <getpid()>" and waits to be killed.
 * Usage: memory_holder MIB KERNEL_US. Exits 1 (saying which call failed) when a call fails. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "abi/cuda_driver.h"

#define CALL(call)                                                \
  do {                                                            \
    CUresult r_ = (call);                                         \
    if (r_ != CUDA_SUCCESS) {                                     \
      fprintf(stderr, "memory_holder: %s: %d\n", #call, (int)r_); \
      return 1;                                                   \
    }                                                             \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: memory_holder MIB KERNEL_US\n");
    return 2;
  }
  unsigned long long bytes = strtoull(argv[1], NULL, 10) << 20;
  char kernel[64];
  snprintf(kernel, sizeof(kernel), "busy_%sus", argv[2]);
  CUcontext ctx;
  CUdeviceptr p;
  CUmodule mod;
  CUfunction f;
  CALL(cuInit(0));
  CALL(cuDevicePrimaryCtxRetain(&ctx, 0));
  CALL(cuCtxSetCurrent(ctx));
  CALL(cuMemAlloc(&p, bytes));
  CALL(cuModuleLoadData(&mod, "image"));
  CALL(cuModuleGetFunction(&f, mod, kernel));
  CALL(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  CALL(cuCtxSynchronize());
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  for (;;) pause();
}
