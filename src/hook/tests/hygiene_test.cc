// Binary hygiene of libtessera-cuda.so, checked on the built file: what it needs from the system,
// what it exports, how it was built, and that preloading it into programs that never touch CUDA
// changes nothing.
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

std::string Tool(const std::vector<std::string>& argv) {
  Env env = {{"PATH", "/usr/bin:/bin"}, {"LC_ALL", "C"}};
  RunResult r = RunProgram(argv, env, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  return r.out;
}

class HygieneTest : public ::testing::Test {
 protected:
  HookEnv hook;
};

TEST_F(HygieneTest, NeedsNoGlibcNewerThan217) {
  std::string table = Tool({"/usr/bin/objdump", "-T", hook.library()});
  std::regex version(R"(GLIBC_2\.(\d+))");
  int newest = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), version), end; it != end; ++it) {
    newest = std::max(newest, std::stoi((*it)[1]));
  }
  EXPECT_GT(newest, 0) << table;
  EXPECT_LE(newest, 17) << table;
}

TEST_F(HygieneTest, NeedsNoCxxRuntime) {
  std::string dynamic = Tool({"/usr/bin/readelf", "-d", hook.library()});
  EXPECT_EQ(dynamic.find("libstdc++"), std::string::npos) << dynamic;
  EXPECT_EQ(dynamic.find("libgcc_s"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("libc.so.6"), std::string::npos) << dynamic;
}

TEST_F(HygieneTest, ExportsOnlyHooks) {
  std::string table = Tool({"/usr/bin/objdump", "-T", hook.library()});
  std::istringstream lines(table);
  std::string line;
  std::set<std::string> exported;
  while (std::getline(lines, line)) {
    if (line.find("*UND*") != std::string::npos) continue;
    if (line.find(" DF ") == std::string::npos && line.find(" DO ") == std::string::npos) continue;
    exported.insert(line.substr(line.find_last_of(' ') + 1));
  }
  EXPECT_TRUE(exported.count("dlsym"));
  EXPECT_TRUE(exported.count("cuGetProcAddress_v2"));
  EXPECT_TRUE(exported.count("cuMemAlloc_v2"));
  EXPECT_TRUE(exported.count("nvmlDeviceGetMemoryInfo"));
  EXPECT_FALSE(exported.count("cuGetExportTable")) << "cuGetExportTable must pass through";
  for (const std::string& name : exported) {
    EXPECT_TRUE(name == "dlsym" || name.rfind("cu", 0) == 0 || name.rfind("nvml", 0) == 0)
        << "exported: " << name;
  }
}

TEST_F(HygieneTest, IsBuiltOptimised) {
  std::string info = Tool({"/usr/bin/readelf", "--debug-dump=info", hook.library()});
  auto at = info.find("DW_AT_producer");
  ASSERT_NE(at, std::string::npos) << "no debug information to check the build flags";
  std::string producer = info.substr(at, info.find('\n', at) - at);
  EXPECT_NE(producer.find("-O2"), std::string::npos) << producer;
  EXPECT_EQ(producer.find("sanitize"), std::string::npos) << producer;
}

// Runs `argv` with and without the library preloaded (limits configured, region in the temp
// directory) and expects the same output and exit code, no region created.
void ExpectUnchanged(HookEnv& hook, const std::vector<std::string>& argv) {
  Env plain = {{"PATH", "/usr/bin:/bin"}, {"LC_ALL", "C"}};
  Env preloaded = plain;
  preloaded["LD_PRELOAD"] = hook.library();
  preloaded["CUDA_DEVICE_MEMORY_LIMIT"] = "1g";
  preloaded["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = hook.region_path();
  RunResult a = RunProgram(argv, plain);
  RunResult b = RunProgram(argv, preloaded);
  EXPECT_EQ(a.exit_code, b.exit_code) << b.Describe();
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.err, b.err);
  EXPECT_EQ(hook.MapRegion(), nullptr) << "a process without CUDA created the region";
}

TEST_F(HygieneTest, PreloadIntoTrueChangesNothing) {
  ExpectUnchanged(hook, {"/bin/true"});
}

TEST_F(HygieneTest, PreloadIntoBashChangesNothing) {
  ExpectUnchanged(hook, {"/bin/bash", "-c", "true"});
  ExpectUnchanged(hook, {"/bin/bash", "-c", "echo out; echo err >&2; exit 7"});
}

TEST_F(HygieneTest, PreloadIntoANonCudaProgramChangesNothing) {
  // sort uses the C library only; python3 -c uses dlopen/dlsym heavily when it exists.
  ExpectUnchanged(hook, {"/bin/sh", "-c", "printf 'b\\na\\n' | sort"});
  if (access("/usr/bin/python3", X_OK) == 0) {
    ExpectUnchanged(hook,
                    {"/usr/bin/python3", "-c", "import ctypes, json; print(json.dumps([1]))"});
  }
}

TEST_F(HygieneTest, PreloadWithMalformedLimitsLeavesNonCudaProgramsAlone) {
  Env env = {{"PATH", "/usr/bin:/bin"},
             {"LD_PRELOAD", hook.library()},
             {"CUDA_DEVICE_MEMORY_LIMIT", "4Q"}};
  RunResult r = RunProgram({"/bin/sh", "-c", "echo fine"}, env);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "fine\n");
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace tessera::hooktest
