// The program's exit statuses where no GPU is needed: 2 with no driver, 2 on a bad command line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Ran {
  int status = -1;
  std::string output;  // stdout and stderr
};

Ran RunGpuCheck(const std::string& args) {
  const char* dir = std::getenv("TESSERA_BUILD_DIR");
  std::string build = dir != nullptr ? dir : "build";
  std::string command = build + "/bin/gpu_check " + args + " 2>&1";
  Ran r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(GpuCheckCliTest, Table) {
  struct Case {
    std::string args;
    int status;
    std::string output_has;
  } cases[] = {
      {"--help", 0, "usage: gpu_check MODE"},
      {"", 2, "no mode given"},
      {"spred", 2, "did you mean spread?"},
      {"share --expect 300", 2, "want a number from 0 to 100"},
      {"spread --libcuda /nonexistent/libcuda.so.1", 2,
       "cannot load /nonexistent/libcuda.so.1 (the CUDA driver)"},
      {"timeslice --libcuda /nonexistent/libcuda.so.1", 2, "needs the NVIDIA driver installed"},
      {"nvml --libcuda /nonexistent/libcuda.so.1", 2, "cannot load"},
      // A library that loads but is not the driver.
      {"share --libcuda libc.so.6", 2, "libc.so.6 has no cuInit"},
      {"worker --libcuda /nonexistent/libcuda.so.1", 2, "cannot load"},
  };
  for (const Case& c : cases) {
    Ran r = RunGpuCheck(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.output_has), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(GpuCheckCliTest, NoNvmlExitsTwo) {
  const char* dir = std::getenv("TESSERA_BUILD_DIR");
  std::string simgpu = std::string(dir != nullptr ? dir : "build") + "/lib/simgpu/libcuda.so.1";
  if (access(simgpu.c_str(), R_OK) != 0) GTEST_SKIP() << "needs simgpu's libcuda.so.1";
  Ran r = RunGpuCheck("nvml --libcuda " + simgpu + " --libnvml /nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot load /nonexistent/libnvidia-ml.so.1 (NVML)"), std::string::npos)
      << r.output;
}

}  // namespace
