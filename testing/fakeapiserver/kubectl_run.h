// Runs the real kubectl for tests against the fake API server: one command line, its exit code
// and its output (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tessera::testing {

struct KubectlRun {
  int exit_code = -1;
  std::string output;
};

// The shell command that runs kubectl with `kubeconfig`, its own cache folder, and `args`.
inline std::string KubectlCommand(const std::string& kubeconfig, const std::string& cache_dir,
                                  const std::string& args) {
  return "timeout 60 kubectl --kubeconfig '" + kubeconfig + "' --cache-dir '" + cache_dir + "' " +
         args + " 2>&1";
}

inline KubectlRun RunKubectl(const std::string& kubeconfig, const std::string& cache_dir,
                             const std::string& args) {
  KubectlRun r;
  FILE* p = popen(KubectlCommand(kubeconfig, cache_dir, args).c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace tessera::testing
