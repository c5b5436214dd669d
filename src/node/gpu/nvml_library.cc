#include "node/gpu/nvml_library.h"

#include <dlfcn.h>

namespace tessera::node {

namespace {
template <typename F>
void Resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
}
}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return FailedPrecondition("cannot load the NVIDIA driver's NVML library " + path + ": " +
                              (why ? why : "unknown error") +
                              " (is the driver installed and the library on the loader path?)");
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;
  decltype(&nvmlInit_v2) init = nullptr;
  Resolve(handle, "nvmlInit_v2", init);
  Resolve(handle, "nvmlShutdown", lib->shutdown_);
  Resolve(handle, "nvmlErrorString", lib->error_string_);
  Resolve(handle, "nvmlDeviceGetCount_v2", lib->DeviceGetCount);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", lib->DeviceGetHandleByIndex);
  Resolve(handle, "nvmlDeviceGetHandleByUUID", lib->DeviceGetHandleByUUID);
  Resolve(handle, "nvmlDeviceGetUUID", lib->DeviceGetUUID);
  Resolve(handle, "nvmlDeviceGetName", lib->DeviceGetName);
  Resolve(handle, "nvmlDeviceGetIndex", lib->DeviceGetIndex);
  Resolve(handle, "nvmlDeviceGetMinorNumber", lib->DeviceGetMinorNumber);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", lib->DeviceGetMemoryInfo);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", lib->DeviceGetPciInfo);
  Resolve(handle, "nvmlDeviceGetAttributes_v2", lib->DeviceGetAttributes);
  Resolve(handle, "nvmlDeviceGetNumaNodeId", lib->DeviceGetNumaNodeId);
  Resolve(handle, "nvmlDeviceGetCudaComputeCapability", lib->DeviceGetCudaComputeCapability);
  Resolve(handle, "nvmlSystemGetDriverVersion", lib->SystemGetDriverVersion);
  Resolve(handle, "nvmlEventSetCreate", lib->EventSetCreate);
  Resolve(handle, "nvmlDeviceRegisterEvents", lib->DeviceRegisterEvents);
  Resolve(handle, "nvmlEventSetWait_v2", lib->EventSetWait);
  Resolve(handle, "nvmlEventSetFree", lib->EventSetFree);
  Resolve(handle, "nvmlDeviceGetProcessUtilization", lib->DeviceGetProcessUtilization);
  Resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", lib->DeviceGetComputeRunningProcesses);
  Resolve(handle, "nvmlDeviceGetMigMode", lib->DeviceGetMigMode);
  Resolve(handle, "nvmlDeviceSetMigMode", lib->DeviceSetMigMode);
  Resolve(handle, "nvmlDeviceGetGpuInstanceProfileInfo", lib->DeviceGetGpuInstanceProfileInfo);
  Resolve(handle, "nvmlDeviceCreateGpuInstanceWithPlacement",
          lib->DeviceCreateGpuInstanceWithPlacement);
  Resolve(handle, "nvmlDeviceGetGpuInstances", lib->DeviceGetGpuInstances);
  Resolve(handle, "nvmlDeviceGetGpuInstanceById", lib->DeviceGetGpuInstanceById);
  Resolve(handle, "nvmlGpuInstanceGetInfo", lib->GpuInstanceGetInfo);
  Resolve(handle, "nvmlGpuInstanceDestroy", lib->GpuInstanceDestroy);
  Resolve(handle, "nvmlGpuInstanceGetComputeInstanceProfileInfo",
          lib->GpuInstanceGetComputeInstanceProfileInfo);
  Resolve(handle, "nvmlGpuInstanceCreateComputeInstance", lib->GpuInstanceCreateComputeInstance);
  Resolve(handle, "nvmlGpuInstanceGetComputeInstances", lib->GpuInstanceGetComputeInstances);
  Resolve(handle, "nvmlComputeInstanceDestroy", lib->ComputeInstanceDestroy);
  Resolve(handle, "nvmlDeviceGetMaxMigDeviceCount", lib->DeviceGetMaxMigDeviceCount);
  Resolve(handle, "nvmlDeviceGetMigDeviceHandleByIndex", lib->DeviceGetMigDeviceHandleByIndex);
  Resolve(handle, "nvmlDeviceGetGpuInstanceId", lib->DeviceGetGpuInstanceId);
  Resolve(handle, "nvmlDeviceGetComputeInstanceId", lib->DeviceGetComputeInstanceId);
  const char* missing = nullptr;
  if (!init)
    missing = "nvmlInit_v2";
  else if (!lib->shutdown_)
    missing = "nvmlShutdown";
  else if (!lib->DeviceGetCount)
    missing = "nvmlDeviceGetCount_v2";
  else if (!lib->DeviceGetHandleByIndex)
    missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (!lib->DeviceGetUUID)
    missing = "nvmlDeviceGetUUID";
  else if (!lib->DeviceGetName)
    missing = "nvmlDeviceGetName";
  else if (!lib->DeviceGetMemoryInfo)
    missing = "nvmlDeviceGetMemoryInfo";
  if (missing != nullptr) {
    ::dlclose(handle);
    lib->handle_ = nullptr;
    return FailedPrecondition(path + " lacks " + missing + " (driver too old?)");
  }
  nvmlReturn_t r = init();
  if (r != NVML_SUCCESS) {
    Status s = lib->Check(r, "nvmlInit_v2");
    ::dlclose(handle);
    lib->handle_ = nullptr;
    return s;
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ == nullptr) return;
  shutdown_();
  ::dlclose(handle_);
}

bool NvmlLibrary::HasMig() const {
  return DeviceGetMigMode && DeviceSetMigMode && DeviceGetGpuInstanceProfileInfo &&
         DeviceCreateGpuInstanceWithPlacement && DeviceGetGpuInstances &&
         DeviceGetGpuInstanceById && GpuInstanceGetInfo && GpuInstanceDestroy &&
         GpuInstanceGetComputeInstanceProfileInfo && GpuInstanceCreateComputeInstance &&
         GpuInstanceGetComputeInstances && ComputeInstanceDestroy && DeviceGetMaxMigDeviceCount &&
         DeviceGetMigDeviceHandleByIndex && DeviceGetGpuInstanceId && DeviceGetComputeInstanceId;
}

Status NvmlLibrary::Check(nvmlReturn_t r, const char* call) const {
  if (r == NVML_SUCCESS) return Status::Ok();
  std::string what = error_string_ ? error_string_(r) : ("error " + std::to_string(r));
  return Unavailable(std::string("NVML ") + call + ": " + what);
}

}  // namespace tessera::node
