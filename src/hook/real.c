#include "os.h"

#include "real.h"

#include <dlfcn.h>

static const char* const kNames[REAL_COUNT] = {
#define HOOK_REAL_NAME(name) [REAL_##name] = #name,
    HOOK_REAL_CUDA(HOOK_REAL_NAME) HOOK_REAL_NVML(HOOK_REAL_NAME)
#undef HOOK_REAL_NAME
};

void* real_fns[REAL_COUNT];
static void* g_dlsym;
static void* g_cuda;
static void* g_nvml;

void* real_dlsym(void* handle, const char* name) {
  void* fn = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  if (fn == NULL) {
    fn = dlvsym(RTLD_NEXT, "dlsym", TESSERA_GLIBC_BASE);
    if (fn == NULL) return NULL;
    __atomic_store_n(&g_dlsym, fn, __ATOMIC_RELEASE);
  }
  return ((void* (*)(void*, const char*))fn)(handle, name);
}

static void* open_library(void** slot, const char* soname) {
  void* handle = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (handle != NULL) return handle;
  handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == NULL) handle = dlopen(soname, RTLD_LAZY);
  if (handle == NULL) return NULL;
  void* expected = NULL;
  if (!__atomic_compare_exchange_n(slot, &expected, handle, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    dlclose(handle); /* another thread won; drop the extra reference */
    return expected;
  }
  return handle;
}

void* real_cuda_library(void) {
  return open_library(&g_cuda, "libcuda.so.1");
}
void* real_nvml_library(void) {
  return open_library(&g_nvml, "libnvidia-ml.so.1");
}

void* real_resolve(enum hook_real_id id) {
  void* fn = __atomic_load_n(&real_fns[id], __ATOMIC_ACQUIRE);
  if (fn != NULL) return fn == REAL_NOT_FOUND ? NULL : fn;
  void* library = id < REAL_CUDA_END ? real_cuda_library() : real_nvml_library();
  if (library == NULL) return NULL; /* not cached: the library may be loadable later */
  fn = real_dlsym(library, kNames[id]);
  __atomic_store_n(&real_fns[id], fn ? fn : REAL_NOT_FOUND, __ATOMIC_RELEASE);
  return fn;
}

void real_resolve_cuda(void) {
  static int done;
  if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
  for (int id = 0; id < REAL_CUDA_END; ++id) real_resolve((enum hook_real_id)id);
  __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}
