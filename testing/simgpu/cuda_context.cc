// Primary and ordinary contexts, the current-context stack, context synchronisation.
#include "capture_rules.h"
#include "driver_state.h"
#include "pool_ops.h"
#include "stream_ops.h"

using namespace simgpu;

namespace {

// Creates a context on ordinal `dev`, charging the context's device memory. Needs mu.
CUresult NewContext(Driver& d, CUdevice dev, unsigned flags, bool primary, Context** out) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  int device = d.visible[dev];
  if (CUresult r = CheckDevice(d, device); r != CUDA_SUCCESS) return r;
  uint32_t id = 0;
  {
    SharedState::Lock lock(*d.state);
    if (!d.state->Charge(lock, device, d.state->file().ctx_memory)) return CUDA_ERROR_OUT_OF_MEMORY;
    d.state->CountContext(lock, device, +1);
    id = ++d.state->file().next_ctx_id;
    if (id == 0) id = ++d.state->file().next_ctx_id;  // 0 means no context
  }
  auto* ctx = new Context();
  ctx->id = id;
  ctx->ordinal = dev;
  ctx->device = device;
  ctx->primary = primary;
  ctx->flags = flags;
  ctx->legacy.ctx = ctx;
  ctx->legacy.is_default = true;
  d.contexts.insert(ctx);
  *out = ctx;
  return CUDA_SUCCESS;
}

CUresult CreateAndPush(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = NewContext(d, dev, flags, false, &ctx); r != CUDA_SUCCESS) return r;
  ContextStack().push_back(CurrentContext());
  CurrentContext() = ctx;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult PrimaryRelease(CUdevice dev, bool reset) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  Driver::PrimaryContext& p = d.primary[dev];
  if (p.ctx == nullptr) return reset ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  if (!reset && --p.refs > 0) return CUDA_SUCCESS;
  DestroyContext(d, p.ctx);
  p = Driver::PrimaryContext{};
  return CUDA_SUCCESS;
}

CUresult SyncContext(Context* ctx_or_null) {
  Driver& d = TheDriver();
  return WaitForPoint([&](KernelRef* until) {
    Context* ctx = ctx_or_null;
    if (ctx == nullptr) {
      if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
    } else if (d.contexts.count(ctx) == 0) {
      return CUDA_ERROR_INVALID_CONTEXT;
    } else if (ctx->sticky_error != CUDA_SUCCESS) {
      return ctx->sticky_error;
    }
    if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
    *until = ContextLast(d, *ctx);
    PoolsAtSync(d);
    return CUDA_SUCCESS;
  });
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  Driver::PrimaryContext& p = d.primary[dev];
  if (p.ctx == nullptr) {
    if (CUresult r = NewContext(d, dev, p.flags, true, &p.ctx); r != CUDA_SUCCESS) return r;
  }
  ++p.refs;
  *pctx = reinterpret_cast<CUcontext>(p.ctx);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return PrimaryRelease(dev, false);
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return PrimaryRelease(dev, true);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  d.primary[dev].flags = flags;
  if (d.primary[dev].ctx != nullptr) d.primary[dev].ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  *flags = d.primary[dev].flags;
  *active = d.primary[dev].ctx != nullptr ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return CreateAndPush(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (numParams > 0) return CUDA_ERROR_NOT_SUPPORTED;  // no execution affinity (MPS) simulated
  return CreateAndPush(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                        CUdevice dev) {
  if (params != nullptr && (params->numExecAffinityParams > 0 || params->cigParams != nullptr)) {
    return CUDA_ERROR_NOT_SUPPORTED;  // no execution affinity or CIG simulated
  }
  return CreateAndPush(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext c) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* ctx = reinterpret_cast<Context*>(c);
  if (ctx == nullptr || d.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  std::vector<Context*>& stack = ContextStack();
  std::erase(stack, ctx);
  DestroyContext(d, ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* ctx = reinterpret_cast<Context*>(c);
  if (ctx != nullptr && d.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CurrentContext() = ctx;
  return CUDA_SUCCESS;
}

// A real driver answers from thread-local state without a lock (allocators and interposers call
// it on every allocation): so does this, unless a context was destroyed since the thread last
// found its current one alive, which it then checks under mu.
CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  if (!d.initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
  ThreadContext& thread = ThisThread();
  Context* ctx = thread.current;
  if (ctx == nullptr ||
      thread.checked_generation == d.context_generation.load(std::memory_order_acquire)) {
    *pctx = reinterpret_cast<CUcontext>(ctx);
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> guard(d.mu);
  bool alive = d.contexts.count(ctx) != 0;
  if (alive) thread.checked_generation = d.context_generation.load(std::memory_order_relaxed);
  *pctx = alive ? reinterpret_cast<CUcontext>(ctx) : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* ctx = reinterpret_cast<Context*>(c);
  if (ctx == nullptr || d.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  ContextStack().push_back(CurrentContext());
  CurrentContext() = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Context* ctx = CurrentContext();
  if (ctx == nullptr || d.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(ctx);
  std::vector<Context*>& stack = ContextStack();
  CurrentContext() = stack.empty() ? nullptr : stack.back();
  if (!stack.empty()) stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  return cuCtxGetDevice_v2(device, nullptr);
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext c) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = reinterpret_cast<Context*>(c);
  if (ctx == nullptr) {
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  } else if (d.contexts.count(ctx) == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *device = ctx->ordinal;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  return SyncContext(nullptr);
}
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return SyncContext(reinterpret_cast<Context*>(ctx));
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE:
      ctx->stack_bytes = value;
      return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE:
      ctx->printf_fifo_bytes = value;
      return CUDA_SUCCESS;
    case CU_LIMIT_MALLOC_HEAP_SIZE: {
      if (value == 0) return CUDA_ERROR_INVALID_VALUE;
      uint64_t before = HeapCharge(*ctx);
      uint64_t old_heap = ctx->heap_bytes;
      ctx->heap_bytes = value;
      uint64_t after = HeapCharge(*ctx);
      SharedState::Lock lock(*d.state);
      if (after > before && !d.state->Charge(lock, ctx->device, after - before)) {
        ctx->heap_bytes = old_heap;
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (after < before) d.state->Uncharge(lock, ctx->device, before - after);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE:
      *value = ctx->stack_bytes;
      return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE:
      *value = ctx->printf_fifo_bytes;
      return CUDA_SUCCESS;
    case CU_LIMIT_MALLOC_HEAP_SIZE:
      *value = ctx->heap_bytes;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUresult cuCtxGetApiVersion(CUcontext c, unsigned int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = reinterpret_cast<Context*>(c);
  if (ctx == nullptr) {
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  } else if (d.contexts.count(ctx) == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *version = 3020;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
