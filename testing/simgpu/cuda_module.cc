// Modules and functions. Any non-null image loads (nothing is parsed); cuModuleLoad needs a file
// that can be opened. Every name exists in every module: cuModuleGetFunction gives a function
// whose duration follows its name and launch shape (kernel_timing.h); cuModuleGetGlobal gives
// NOT_FOUND (modules have no globals here). Modules take no device memory.
#include <fcntl.h>
#include <unistd.h>

#include "driver_state.h"
#include "kernel_timing.h"

using namespace simgpu;

namespace {

CUresult NewModule(CUmodule* module) {
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  auto* m = new Module();
  m->ctx = ctx;
  d.modules.insert(m);
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (fname == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int fd = open(fname, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_FILE_NOT_FOUND;
  close(fd);
  return NewModule(module);
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NewModule(module);
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  if (image == nullptr || (numOptions > 0 && (options == nullptr || optionValues == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return NewModule(module);
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  if (fatCubin == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NewModule(module);
}

CUresult cuModuleUnload(CUmodule hmod) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* m = reinterpret_cast<Module*>(hmod);
  if (d.modules.count(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, f] : m->functions) d.functions.erase(f.get());
  d.modules.erase(m);
  delete m;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* m = reinterpret_cast<Module*>(hmod);
  if (d.modules.count(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  std::unique_ptr<Function>& f = m->functions[name];
  if (!f) {
    f = std::make_unique<Function>();
    f->name = name;
    f->timing = KernelTimingOf(name);
    f->ctx = m->ctx;
    d.functions.insert(f.get());
  }
  *hfunc = reinterpret_cast<CUfunction>(f.get());
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr*, size_t*, CUmodule hmod, const char* name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (d.modules.count(reinterpret_cast<Module*>(hmod)) == 0) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
