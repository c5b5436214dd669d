// Every kernel launch entry point. Kernel arguments are accepted and ignored.
#include "driver_state.h"
#include "launch.h"

using namespace simgpu;

namespace {

CUresult Classic(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, CUstream s, bool per_thread) {
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  return LaunchOne(f, grid, block, s, per_thread);
}

CUresult Ex(const CUlaunchConfig* c, CUfunction f, bool per_thread) {
  if (c == nullptr || (c->numAttrs > 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                 c->hStream, per_thread);
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int, CUstream s,
                        void**, void**) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                             CUstream s, void**, void**) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, true);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void**, void**) {
  return Ex(config, f, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void**, void**) {
  return Ex(config, f, true);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                                   CUstream s, void**) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, false);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int, CUstream s, void**) {
  return Classic(f, gx, gy, gz, bx, by, bz, s, true);
}

CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned int numDevices,
                                              unsigned int) {
  if (list == nullptr || numDevices == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < numDevices; ++i) {
    const CUDA_LAUNCH_PARAMS& p = list[i];
    CUresult r = Classic(p.function, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                         p.blockDimZ, p.hStream, false);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// The legacy launches use a one-thread block (cuFuncSetBlockShape is not simulated).
CUresult cuLaunch(CUfunction f) {
  return Classic(f, 1, 1, 1, 1, 1, 1, nullptr, false);
}

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, grid_width, grid_height, 1, 1, 1, 1, nullptr, false);
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream s) {
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  return Classic(f, grid_width, grid_height, 1, 1, 1, 1, s, false);
}

}  // extern "C"
