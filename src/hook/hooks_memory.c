/* Allocation and free hooks: every allocation path of CUDA-INTERCEPTION.md and its free, plus the
 * exported symbols that programs linking libcuda.so.1 reach by symbol interposition. */
#include "os.h"

#include "alloc_map.h"
#include "charge.h"
#include "hooks.h"
#include "real.h"
#include "spill.h"
#include "state.h"

#define PASS_THROUGH_IF_NESTED(call)  \
  do {                                \
    if (tessera_in_hook) return call; \
  } while (0)

typedef __typeof__(&cuMemAlloc_v2) mem_alloc_fn;
typedef __typeof__(&cuMemAllocPitch_v2) mem_alloc_pitch_fn;
typedef __typeof__(&cuMemAllocManaged) mem_alloc_managed_fn;
typedef __typeof__(&cuMemFree_v2) mem_free_fn;
typedef __typeof__(&cuMemFreeAsync) mem_free_async_fn;
typedef __typeof__(&cuArrayCreate_v2) array_create_fn;
typedef __typeof__(&cuArray3DCreate_v2) array3d_create_fn;
typedef __typeof__(&cuArrayDestroy) array_destroy_fn;
typedef __typeof__(&cuMipmappedArrayCreate) mipmap_create_fn;
typedef __typeof__(&cuMipmappedArrayDestroy) mipmap_destroy_fn;

/* Saturating a * b. */
static uint64_t mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

CUresult hook_mem_alloc(void* real, CUdeviceptr* dptr, size_t bytes) {
  mem_alloc_fn fn = (mem_alloc_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(dptr, bytes));
  HOOK_SCOPE();
  struct charge c;
  CUresult rc = charge_reserve_current(bytes, 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(dptr, bytes);
  if (__builtin_expect(rc == CUDA_ERROR_OUT_OF_MEMORY, 0) && c.active) {
    rc = spill_mem_alloc(&c, bytes, dptr);
  }
  return charge_finish(rc, &c, ALLOC_POINTER, dptr ? *dptr : 0);
}

CUresult hook_mem_alloc_pitch(void* real, CUdeviceptr* dptr, size_t* pitch, size_t width,
                              size_t height, unsigned int element_size) {
  mem_alloc_pitch_fn fn = (mem_alloc_pitch_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(dptr, pitch, width, height, element_size));
  HOOK_SCOPE();
  /* The driver picks the pitch: reserve the width rounded to 512 bytes, then settle. */
  struct charge c;
  uint64_t estimate = mul((width + 511) & ~(uint64_t)511, height ? height : 1);
  CUresult rc = charge_reserve_current(estimate, 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(dptr, pitch, width, height, element_size);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && c.active && pitch != NULL) {
    /* Host memory at the pitch the reservation assumed, a multiple of every device's texture
     * pitch alignment: the charge then needs no settling (below, which a spilled charge, whose
     * index is its account, must not reach). */
    uint64_t spill_pitch = (width + 511) & ~(uint64_t)511;
    rc = spill_mem_alloc(&c, mul(spill_pitch, height), dptr);
    if (rc == CUDA_SUCCESS) *pitch = spill_pitch;
  }
  if (rc == CUDA_SUCCESS && c.active && pitch != NULL) {
    CUdevice dev;
    uint64_t granule = 2ull << 20;
    if (hook_current_device(&dev) == 0) granule = hook_granularity(dev);
    uint64_t actual = hook_round_up(mul(*pitch, height ? height : 1), granule);
    if (actual > c.bytes && charge_grow(&c, actual - c.bytes) != CUDA_SUCCESS) {
      REAL(cuMemFree_v2)(*dptr);
      *dptr = 0;
      charge_finish(CUDA_ERROR_OUT_OF_MEMORY, &c, ALLOC_POINTER, 0);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < c.bytes) charge_shrink(&c, c.bytes - actual);
  }
  return charge_finish(rc, &c, ALLOC_POINTER, dptr ? *dptr : 0);
}

CUresult hook_mem_alloc_managed(void* real, CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  mem_alloc_managed_fn fn = (mem_alloc_managed_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(dptr, bytes, flags));
  HOOK_SCOPE();
  /* Managed memory may migrate to the device at any time: it is charged in full. */
  struct charge c;
  CUresult rc = charge_reserve_current(bytes, 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(dptr, bytes, flags);
  return charge_finish(rc, &c, ALLOC_POINTER, dptr ? *dptr : 0);
}

CUresult hook_mem_free(void* real, CUdeviceptr dptr) {
  mem_free_fn fn = (mem_free_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(dptr));
  HOOK_SCOPE();
  struct charge c;
  charge_take(ALLOC_POINTER, dptr, &c);
  if (__builtin_expect(charge_spilled(&c), 0)) return spill_mem_free(&c, dptr, 0, NULL);
  return charge_release(fn(dptr), &c, ALLOC_POINTER, dptr);
}

CUresult hook_mem_free_async(void* real, CUdeviceptr dptr, CUstream stream) {
  mem_free_async_fn fn = (mem_free_async_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(dptr, stream));
  HOOK_SCOPE();
  struct charge c;
  charge_take(ALLOC_POINTER, dptr, &c);
  if (__builtin_expect(charge_spilled(&c), 0)) return spill_mem_free(&c, dptr, 1, stream);
  return charge_release(fn(dptr, stream), &c, ALLOC_POINTER, dptr);
}

/* Bytes of one element of an array format (unknown formats: 16, the largest). */
static uint64_t element_bytes(CUarray_format format, unsigned int channels) {
  uint64_t size;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      size = 1;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      size = 2;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      size = 4;
      break;
    default:
      return 16;
  }
  return size * (channels ? channels : 1);
}

static uint64_t array_bytes(size_t width, size_t height, size_t depth, CUarray_format format,
                            unsigned int channels) {
  uint64_t n = mul(mul(width ? width : 1, height ? height : 1), depth ? depth : 1);
  return mul(n, element_bytes(format, channels));
}

CUresult hook_array_create(void* real, CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  array_create_fn fn = (array_create_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(array, desc));
  HOOK_SCOPE();
  if (desc == NULL) return charge_failed_mode() ? CUDA_ERROR_NOT_INITIALIZED : fn(array, desc);
  struct charge c;
  CUresult rc = charge_reserve_current(
      array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels), 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(array, desc);
  return charge_finish(rc, &c, ALLOC_ARRAY, array ? (uint64_t)(uintptr_t)*array : 0);
}

CUresult hook_array3d_create(void* real, CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  array3d_create_fn fn = (array3d_create_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(array, desc));
  HOOK_SCOPE();
  if (desc == NULL) return charge_failed_mode() ? CUDA_ERROR_NOT_INITIALIZED : fn(array, desc);
  struct charge c;
  CUresult rc = charge_reserve_current(
      array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels), 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(array, desc);
  return charge_finish(rc, &c, ALLOC_ARRAY, array ? (uint64_t)(uintptr_t)*array : 0);
}

CUresult hook_array_destroy(void* real, CUarray array) {
  array_destroy_fn fn = (array_destroy_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(array));
  HOOK_SCOPE();
  struct charge c;
  uint64_t key = (uint64_t)(uintptr_t)array;
  charge_take(ALLOC_ARRAY, key, &c);
  return charge_release(fn(array), &c, ALLOC_ARRAY, key);
}

CUresult hook_mipmap_create(void* real, CUmipmappedArray* array,
                            const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int levels) {
  mipmap_create_fn fn = (mipmap_create_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(array, desc, levels));
  HOOK_SCOPE();
  if (desc == NULL) {
    return charge_failed_mode() ? CUDA_ERROR_NOT_INITIALIZED : fn(array, desc, levels);
  }
  /* Every level halves each dimension (never below 1). */
  uint64_t total = 0;
  for (unsigned int level = 0; level < (levels ? levels : 1) && level < 64; ++level) {
    size_t w = desc->Width >> level, h = desc->Height >> level, d = desc->Depth >> level;
    uint64_t bytes = array_bytes(w ? w : 1, h ? h : 1, d ? d : 1, desc->Format, desc->NumChannels);
    total = total > UINT64_MAX - bytes ? UINT64_MAX : total + bytes;
  }
  struct charge c;
  CUresult rc = charge_reserve_current(total, 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  rc = fn(array, desc, levels);
  return charge_finish(rc, &c, ALLOC_MIPMAP, array ? (uint64_t)(uintptr_t)*array : 0);
}

CUresult hook_mipmap_destroy(void* real, CUmipmappedArray array) {
  mipmap_destroy_fn fn = (mipmap_destroy_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  PASS_THROUGH_IF_NESTED(fn(array));
  HOOK_SCOPE();
  struct charge c;
  uint64_t key = (uint64_t)(uintptr_t)array;
  charge_take(ALLOC_MIPMAP, key, &c);
  return charge_release(fn(array), &c, ALLOC_MIPMAP, key);
}

/* Exported symbols (programs that link libcuda.so.1). */
HOOK_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  return hook_mem_alloc(real_fn(REAL_cuMemAlloc_v2), dptr, bytes);
}
HOOK_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                        size_t height, unsigned int element_size) {
  return hook_mem_alloc_pitch(real_fn(REAL_cuMemAllocPitch_v2), dptr, pitch, width, height,
                              element_size);
}
HOOK_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  return hook_mem_alloc_managed(real_fn(REAL_cuMemAllocManaged), dptr, bytes, flags);
}
HOOK_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return hook_mem_free(real_fn(REAL_cuMemFree_v2), dptr);
}
HOOK_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return hook_mem_free_async(real_fn(REAL_cuMemFreeAsync), dptr, stream);
}
HOOK_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return hook_mem_free_async(real_fn(REAL_cuMemFreeAsync_ptsz), dptr, stream);
}
HOOK_EXPORT CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  return hook_array_create(real_fn(REAL_cuArrayCreate_v2), array, desc);
}
HOOK_EXPORT CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  return hook_array3d_create(real_fn(REAL_cuArray3DCreate_v2), array, desc);
}
HOOK_EXPORT CUresult cuArrayDestroy(CUarray array) {
  return hook_array_destroy(real_fn(REAL_cuArrayDestroy), array);
}
HOOK_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* array,
                                            const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                            unsigned int levels) {
  return hook_mipmap_create(real_fn(REAL_cuMipmappedArrayCreate), array, desc, levels);
}
HOOK_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  return hook_mipmap_destroy(real_fn(REAL_cuMipmappedArrayDestroy), array);
}
