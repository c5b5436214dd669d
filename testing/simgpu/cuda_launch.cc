// Every kernel launch entry point. Kernel arguments are ignored, but for a `work_<N>ns` kernel's
// first one, its unit count (launch.h).
#include "driver_state.h"
#include "launch.h"

using namespace simgpu;

namespace {

CUresult Classic(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, CUstream s, bool per_thread, const KernelArgs& args) {
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  return LaunchOne(f, grid, block, args, s, per_thread);
}

CUresult Ex(const CUlaunchConfig* c, CUfunction f, bool per_thread, const KernelArgs& args) {
  if (c == nullptr || (c->numAttrs > 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                 c->hStream, per_thread, args);
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int, CUstream s,
                        void** kernelParams, void** extra) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, false, KernelArgs{kernelParams, extra});
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                             CUstream s, void** kernelParams, void** extra) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, true, KernelArgs{kernelParams, extra});
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  return Ex(config, f, false, KernelArgs{kernelParams, extra});
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  return Ex(config, f, true, KernelArgs{kernelParams, extra});
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                                   CUstream s, void** kernelParams) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, false, KernelArgs{kernelParams, nullptr});
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int, CUstream s,
                                        void** kernelParams) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, true, KernelArgs{kernelParams, nullptr});
}

CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned int numDevices,
                                              unsigned int) {
  if (list == nullptr || numDevices == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < numDevices; ++i) {
    const CUDA_LAUNCH_PARAMS& p = list[i];
    CUresult r = Classic(p.function, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                         p.blockDimZ, p.hStream, false, KernelArgs{p.kernelParams, nullptr});
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// The legacy launches use a one-thread block and pass no arguments (cuFuncSetBlockShape and
// cuParamSet* are not simulated): a `work_<N>ns` kernel fails with CUDA_ERROR_INVALID_VALUE.
CUresult cuLaunch(CUfunction f) {
  return Classic(f, 1, 1, 1, 1, 1, 1, nullptr, false, KernelArgs{});
}

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, grid_width, grid_height, 1, 1, 1, 1, nullptr, false, KernelArgs{});
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream s) {
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, grid_width, grid_height, 1, 1, 1, 1, s, false, KernelArgs{});
}

}  // extern "C"
