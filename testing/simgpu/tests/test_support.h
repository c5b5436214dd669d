/* Helpers for simgpu's C test programs: CHECK macros that name the failing call and its result,
 * and a private state directory per run. Plain C. */
#ifndef SIMGPU_TESTS_TEST_SUPPORT_H_
#define SIMGPU_TESTS_TEST_SUPPORT_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/cuda_driver.h"

static int g_failures = 0;

#define EXPECT_RESULT(expected, call)                                                             \
  do {                                                                                            \
    CUresult r_ = (call);                                                                         \
    if (r_ != (expected)) {                                                                       \
      fprintf(stderr, "%s:%d: %s returned %d, expected %s\n", __FILE__, __LINE__, #call, (int)r_, \
              #expected);                                                                         \
      ++g_failures;                                                                               \
    }                                                                                             \
  } while (0)

#define CHECK_OK(call) EXPECT_RESULT(CUDA_SUCCESS, call)

#define EXPECT_TRUE(cond)                                                 \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                       \
    }                                                                     \
  } while (0)

/* Points SIMGPU_STATE at a fresh directory and sets SIMGPU_DEVICES. Call before cuInit. */
static void UsePrivateState(const char* devices) {
  char tmpl[] = "/tmp/simgpu-test-XXXXXX";
  if (mkdtemp(tmpl) == NULL) {
    perror("mkdtemp");
    exit(2);
  }
  setenv("SIMGPU_STATE", tmpl, 1);
  setenv("SIMGPU_DEVICES", devices, 1);
}

/* Removes the private state directory (best effort). */
static void RemovePrivateState(void) {
  const char* dir = getenv("SIMGPU_STATE");
  char cmd[512];
  if (dir == NULL || strncmp(dir, "/tmp/simgpu-test-", 17) != 0) return;
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static int Finish(const char* name) {
  RemovePrivateState();
  if (g_failures != 0) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, g_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif /* SIMGPU_TESTS_TEST_SUPPORT_H_ */
