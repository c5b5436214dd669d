#include "hook_env.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>

namespace tessera::hooktest {

HookEnv::HookEnv() {
  const char* build = std::getenv("TESSERA_BUILD_DIR");
  build_dir_ = build ? build : ".";
  std::string pattern = (std::filesystem::temp_directory_path() / "tessera-hook-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  std::filesystem::create_directories(dir_ + "/state");
}

HookEnv::~HookEnv() {
  if (region_ != nullptr) munmap(region_, TESSERA_REGION_FILE_SIZE);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

bool HookEnv::RealDriver() {
  const char* real = std::getenv("TESSERA_HOOK_REAL_DRIVER");
  return real != nullptr && std::string(real) == "1";
}

uint64_t HookEnv::ContextCost(const std::string& devices) {
  static std::mutex mu;
  static std::map<std::string, uint64_t> measured;  // by machine ("" for the real GPU)
  const std::string machine = RealDriver() ? "" : devices;
  std::lock_guard<std::mutex> guard(mu);
  if (auto it = measured.find(machine); it != measured.end()) return it->second;
  HookEnv scratch;  // a simgpu state of its own
  Env env = scratch.ProbeEnv(devices);
  env.erase("LD_PRELOAD");
  RunResult r =
      RunProgram({scratch.probe(), "direct", "context-cost"}, env, std::chrono::seconds(60));
  const std::string key = "context_bytes=";
  auto at = r.out.find(key);
  if (r.exit_code != 0 || at == std::string::npos) {
    throw std::runtime_error("cannot measure what a context costs: " + r.Describe());
  }
  uint64_t cost = std::stoull(r.out.substr(at + key.size()));
  if (RealDriver() && cost == 0) {
    throw std::runtime_error("a context on the GPU measured as costing nothing: " + r.Describe());
  }
  measured[machine] = cost;
  return cost;
}

Env HookEnv::ProbeEnv(const std::string& devices) const {
  const char* path = std::getenv("PATH");
  Env env{{"PATH", path ? path : "/usr/bin:/bin"},
          {"LD_PRELOAD", library()},
          {"CUDA_DEVICE_MEMORY_SHARED_CACHE", region_path()}};
  if (!RealDriver()) {
    env["LD_LIBRARY_PATH"] = build_dir_ + "/lib/simgpu";
    env["SIMGPU_STATE"] = dir_ + "/state";
    env["SIMGPU_DEVICES"] = devices;
  }
  // The library's log level, when the one running the tests set it (to read what it did).
  if (const char* level = std::getenv("TESSERA_LOG_LEVEL")) env["TESSERA_LOG_LEVEL"] = level;
  return env;
}

std::string HookEnv::WriteFile(const std::string& name, const std::string& text) const {
  std::string path = dir_ + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string HookEnv::WriteLimits(const std::string& name, const std::string& body) const {
  return WriteFile(name, body + "end=" + std::to_string(body.size()) + "\n");
}

nlohmann::json HookEnv::Stat(const std::string& devices) const {
  Env env = ProbeEnv(devices);
  env.erase("LD_PRELOAD");
  RunResult r = RunProgram({simgpu_cli(), "stat"}, env, std::chrono::seconds(30));
  if (r.exit_code != 0) throw std::runtime_error("simgpu stat failed: " + r.Describe());
  return nlohmann::json::parse(r.out);
}

const tessera_region* HookEnv::MapRegion() {
  if (region_ != nullptr) return static_cast<const tessera_region*>(region_);
  int fd = open(region_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* map = mmap(nullptr, TESSERA_REGION_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return nullptr;
  region_ = map;
  return static_cast<const tessera_region*>(region_);
}

const tessera_region_spill* HookEnv::MapSpill() {
  const tessera_region* r = MapRegion();
  if (r == nullptr) return nullptr;
  return reinterpret_cast<const tessera_region_spill*>(reinterpret_cast<const char*>(r) +
                                                       TESSERA_REGION_SPILL_OFFSET);
}

}  // namespace tessera::hooktest
