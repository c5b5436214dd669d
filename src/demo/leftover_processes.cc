#include "demo/leftover_processes.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tessera::demo {
namespace fs = std::filesystem;

namespace {

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool LinkNames(const fs::path& link, const std::string& folder) {
  std::error_code ec;
  fs::path target = fs::read_symlink(link, ec);
  return !ec && target.string().find(folder) != std::string::npos;
}

// The command line of `proc` (a /proc/PID folder) when the process refers to `folder`, else "".
std::string Referring(const fs::path& proc, const std::string& folder) {
  std::string cmdline = ReadAll(proc / "cmdline");
  bool found = cmdline.find(folder) != std::string::npos ||
               ReadAll(proc / "environ").find(folder) != std::string::npos ||
               LinkNames(proc / "cwd", folder);
  std::error_code ec;
  for (fs::directory_iterator fd(proc / "fd", ec), end; !found && !ec && fd != end;
       fd.increment(ec)) {
    found = LinkNames(fd->path(), folder);
  }
  if (!found) return "";
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline.empty() ? "(no command line)" : cmdline;
}

std::vector<std::string> ScanOnce(const std::string& folder) {
  std::vector<std::string> out;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string pid = it->path().filename().string();
    bool number = std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (pid == self || !number) continue;
    std::string cmdline = Referring(it->path(), folder);
    if (!cmdline.empty()) out.push_back(pid + " " + cmdline);
  }
  return out;
}

}  // namespace

std::vector<std::string> LeftoverProcesses(const std::string& folder,
                                           std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<std::string> left = ScanOnce(folder);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = ScanOnce(folder);
  }
  return left;
}

}  // namespace tessera::demo
