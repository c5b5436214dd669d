// External memory and semaphores (Vulkan and OptiX interop): another API's objects imported by file
// descriptor. simgpu has no other API, so the memory a program imports is memory a process exported
// with cuMemExportToShareableHandle (a POSIX descriptor, which is what Vulkan's opaque descriptors
// are to the real driver): importing holds it, as the other API's allocation holds its memory, and
// charges nothing; cuExternalMemoryGetMappedBuffer gives an address range on it that copies,
// memsets and kernels accept, freed with cuMemFree. A semaphore records what is signalled; waits
// do not block (simgpu runs no other API that could signal it). On success the driver owns the
// descriptor and closes it, as the documentation says.
#include <unistd.h>

#include "driver_state.h"
#include "vmm_share_ops.h"

using namespace simgpu;

namespace {

ExternalMemory* LiveMemory(Driver& d, CUexternalMemory handle) {
  auto* m = reinterpret_cast<ExternalMemory*>(handle);
  return d.external_memories.count(m) ? m : nullptr;
}

ExternalSemaphore* LiveSemaphore(Driver& d, CUexternalSemaphore handle) {
  auto* s = reinterpret_cast<ExternalSemaphore*>(handle);
  return d.external_semaphores.count(s) ? s : nullptr;
}

// The driver, the semaphores of a signal or wait and its stream, checked. Needs mu.
CUresult CheckSemaphores(Driver& d, const CUexternalSemaphore* sems, const void* params,
                         unsigned count, CUstream stream, bool per_thread) {
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  if (sems == nullptr || params == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, stream, per_thread, &s); r != CUDA_SUCCESS) return r;
  for (unsigned i = 0; i < count; ++i) {
    if (LiveSemaphore(d, sems[i]) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

CUresult Signal(const CUexternalSemaphore* sems,
                const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params, unsigned count,
                CUstream stream, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckSemaphores(d, sems, params, count, stream, per_thread); r != CUDA_SUCCESS) {
    return r;
  }
  for (unsigned i = 0; i < count; ++i) {
    ExternalSemaphore* s = LiveSemaphore(d, sems[i]);
    s->value = s->type == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
                   ? params[i].params.fence.value
                   : 1;
  }
  return CUDA_SUCCESS;
}

CUresult Wait(const CUexternalSemaphore* sems, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params,
              unsigned count, CUstream stream, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  return CheckSemaphores(d, sems, params, count, stream, per_thread);
}

}  // namespace

extern "C" {

CUresult cuImportExternalMemory(CUexternalMemory* extMem_out,
                                const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* memHandleDesc) {
  if (extMem_out == nullptr || memHandleDesc == nullptr || memHandleDesc->size == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Windows' and Direct3D's handles, and NvSciBuf, do not exist on this platform.
  if (memHandleDesc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  int fd = memHandleDesc->handle.fd;
  uint64_t id = 0;
  if (fd < 0 || !SharedVmmIdOf(fd, &id)) return CUDA_ERROR_INVALID_HANDLE;
  VmmShare share{};
  {
    SharedState::Lock lock(*d.state);
    d.state->Sweep(lock, SharedState::SweepMode::kQuick);
    if (!d.state->HoldVmm(lock, id, &share)) return CUDA_ERROR_INVALID_HANDLE;
    if (memHandleDesc->size > share.size) {
      d.state->DropVmm(lock, id);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  auto* m = new ExternalMemory{id, static_cast<int>(share.device), memHandleDesc->size, 0};
  d.external_memories.insert(m);
  close(fd);
  *extMem_out = reinterpret_cast<CUexternalMemory>(m);
  return CUDA_SUCCESS;
}

CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr* devPtr, CUexternalMemory extMem,
                                         const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* bufferDesc) {
  if (devPtr == nullptr || bufferDesc == nullptr || bufferDesc->size == 0 ||
      bufferDesc->flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  ExternalMemory* m = LiveMemory(d, extMem);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (bufferDesc->offset > m->size || bufferDesc->size > m->size - bufferDesc->offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t base = d.address_space.Allocate(bufferDesc->size, 0);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.device = m->device;
  a.size = bufferDesc->size;
  a.ctx = ctx;
  a.external = m;
  d.allocations[base] = a;
  ++m->buffers;
  *devPtr = base;
  return CUDA_SUCCESS;
}

CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  ExternalMemory* m = LiveMemory(d, extMem);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  {
    SharedState::Lock lock(*d.state);
    d.state->DropVmm(lock, m->share_id);
  }
  d.external_memories.erase(m);
  // Buffers not freed yet keep their address ranges until the program frees them (it must).
  if (m->buffers == 0) {
    delete m;
  } else {
    m->destroyed = true;
  }
  return CUDA_SUCCESS;
}

CUresult cuImportExternalSemaphore(CUexternalSemaphore* extSem_out,
                                   const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* semHandleDesc) {
  if (extSem_out == nullptr || semHandleDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUexternalSemaphoreHandleType type = semHandleDesc->type;
  if (type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD &&
      type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD) {
    return CUDA_ERROR_NOT_SUPPORTED;  // Windows', Direct3D's and NvSciSync's
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  if (semHandleDesc->handle.fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  auto* s = new ExternalSemaphore{type, 0};
  d.external_semaphores.insert(s);
  close(semHandleDesc->handle.fd);
  *extSem_out = reinterpret_cast<CUexternalSemaphore>(s);
  return CUDA_SUCCESS;
}

CUresult cuSignalExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                         const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray,
                                         unsigned int numExtSems, CUstream stream) {
  return Signal(extSemArray, paramsArray, numExtSems, stream, false);
}

CUresult cuSignalExternalSemaphoresAsync_ptsz(
    const CUexternalSemaphore* extSemArray,
    const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray, unsigned int numExtSems,
    CUstream stream) {
  return Signal(extSemArray, paramsArray, numExtSems, stream, true);
}

CUresult cuWaitExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                       const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray,
                                       unsigned int numExtSems, CUstream stream) {
  return Wait(extSemArray, paramsArray, numExtSems, stream, false);
}

CUresult cuWaitExternalSemaphoresAsync_ptsz(const CUexternalSemaphore* extSemArray,
                                            const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray,
                                            unsigned int numExtSems, CUstream stream) {
  return Wait(extSemArray, paramsArray, numExtSems, stream, true);
}

CUresult cuDestroyExternalSemaphore(CUexternalSemaphore extSem) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  ExternalSemaphore* s = LiveSemaphore(d, extSem);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  d.external_semaphores.erase(s);
  delete s;
  return CUDA_SUCCESS;
}

}  // extern "C"
