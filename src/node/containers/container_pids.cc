#include "node/containers/container_pids.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "abi/host_pids.h"

namespace tessera::node {

namespace fs = std::filesystem;

namespace {

std::optional<pid_t> ParsePid(std::string_view text) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid <= 0) return std::nullopt;
  return pid;
}

void AppendProcs(const fs::path& dir, std::vector<pid_t>& out) {
  std::ifstream in(dir / "cgroup.procs");
  std::string line;
  while (std::getline(in, line)) {
    if (std::optional<pid_t> pid = ParsePid(line)) out.push_back(*pid);
  }
}

}  // namespace

std::vector<pid_t> CgroupPids(const std::string& cgroup_dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  if (!fs::is_directory(cgroup_dir, ec)) return out;
  AppendProcs(cgroup_dir, out);
  fs::recursive_directory_iterator it(cgroup_dir, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) AppendProcs(it->path(), out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<pid_t> NamespacePid(const std::string& proc_root, pid_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/status");
  if (!in) return std::nullopt;
  std::string line;
  bool read_any = false;
  while (std::getline(in, line)) {
    read_any = true;
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::string field, last;
    while (fields >> field) last = field;
    return ParsePid(last);
  }
  if (!read_any) return std::nullopt;  // the process exited between open and read
  return pid;
}

std::vector<ContainerPid> ContainerPids(const std::string& cgroup_dir,
                                        const std::string& proc_root) {
  std::vector<ContainerPid> out;
  for (pid_t pid : CgroupPids(cgroup_dir)) {
    if (std::optional<pid_t> inner = NamespacePid(proc_root, pid)) out.push_back({pid, *inner});
  }
  return out;
}

std::string PidsText(const std::vector<ContainerPid>& pids) {
  std::string text = "version=" + std::to_string(TESSERA_PIDS_VERSION) + "\n";
  for (const ContainerPid& p : pids) {
    text += std::to_string(p.host) + " " + std::to_string(p.container) + "\n";
  }
  return text;
}

}  // namespace tessera::node
