#include "demo/demo_cluster.h"

#include <cstdlib>
#include <filesystem>

#ifndef TESSERA_SOURCE_DIR
#error "TESSERA_SOURCE_DIR must name the checkout's root"
#endif

namespace tessera::demo {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<DemoPaths> FindDemoPaths() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Internal("cannot find the tessera binary: " + ec.message());
  fs::path bin = self.parent_path();
  const std::string source = TESSERA_SOURCE_DIR;
  DemoPaths p{.build_dir = bin.parent_path().string(),
              .bin_dir = bin.string(),
              .examples_dir = source + "/examples",
              .harness = source + "/testing/cluster/tessera-dev-cluster",
              .build_components = source + "/testing/cluster/build-components"};
  // The cluster's script checks the rest of the build itself (its preflight).
  std::string missing;
  for (const std::string& f : {p.bin_dir + "/kubectl-tessera", p.examples_dir + "/vgpu-pod.yaml",
                               p.harness, p.build_components}) {
    if (!fs::exists(f)) missing += "\n  " + f;
  }
  if (!missing.empty()) {
    return FailedPrecondition(
        "the demo needs these, which are missing (run `make demo`, or build all targets "
        "first):" +
        missing);
  }
  return p;
}

DemoCluster::DemoCluster(DemoPaths paths, std::string dir, int net, CommandRunner& runner)
    : paths_(std::move(paths)), dir_(std::move(dir)), net_(net), runner_(runner) {}

Status DemoCluster::FindComponents(const LineFn& on_line) {
  CommandResult found = runner_.Run({paths_.build_components, "--print"});
  if (found.rc != 0) {
    // Not built on this machine yet: build them (go build shows its progress).
    found = runner_.Run({paths_.build_components},
                        {.on_line = on_line, .timeout = std::chrono::hours(3)});
    if (found.rc != 0) {
      return Unavailable("testing/cluster/build-components failed (exit " +
                         std::to_string(found.rc) + "):\n" + found.output);
    }
  }
  // The folder is its last line.
  std::string out = Trimmed(found.output);
  components_dir_ = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  if (!fs::exists(components_dir_ + "/kubectl")) {
    return Unavailable("build-components named " + components_dir_ + ", which holds no kubectl");
  }
  return Status::Ok();
}

CommandResult DemoCluster::Up(const LineFn& on_line) {
  return runner_.Run({paths_.harness, "up", "--dir", dir_, "--net", std::to_string(net_), "--build",
                      paths_.build_dir},
                     {.on_line = on_line, .timeout = std::chrono::minutes(10)});
}

CommandResult DemoCluster::Down() {
  std::lock_guard<std::mutex> lock(down_mu_);
  if (!down_) {
    // --net too: when `up` failed early there is no record of the cluster, and `down` must look
    // for this cluster's leftovers, not the default one's.
    down_ = runner_.Run({paths_.harness, "down", "--dir", dir_, "--net", std::to_string(net_)},
                        {.timeout = std::chrono::minutes(3), .survives_stop = true});
  }
  return *down_;
}

CommandResult DemoCluster::Kubectl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {components_dir_ + "/kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const char* path = std::getenv("PATH");
  return runner_.Run(argv, {.env = {{"KUBECONFIG", kubeconfig()},
                                    {"PATH", paths_.bin_dir + ":" + components_dir_ +
                                                 (path == nullptr ? "" : ":" + std::string(path))}},
                            .timeout = std::chrono::seconds(30)});
}

Result<json> DemoCluster::GetJson(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"get"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"-o", "json"});
  CommandResult r = Kubectl(argv);
  if (r.rc != 0)
    return Unavailable("kubectl get failed (exit " + std::to_string(r.rc) +
                       "): " + Trimmed(r.output));
  json j = json::parse(r.output, nullptr, false);
  if (j.is_discarded()) return Internal("kubectl get printed no JSON: " + Trimmed(r.output));
  return j;
}

Result<DemoCluster::HttpAnswer> DemoCluster::GetFromScheduler(const std::string& path) {
  // curl is one of the dev cluster's own requirements (its script waits on the scheduler's
  // /readyz with it). It prints the body, then a last line with the status and type.
  const std::string url = scheduler_url() + path;
  CommandResult r = runner_.Run({"/usr/bin/env", "curl", "-sS", "--max-time", "10", "--cacert",
                                 scheduler_ca_file(), "-w", "\n%{http_code} %{content_type}", url},
                                {.timeout = std::chrono::seconds(20)});
  if (r.rc != 0) {
    return Unavailable("curl " + url + " failed (exit " + std::to_string(r.rc) +
                       "): " + Trimmed(r.output));
  }
  size_t last = r.output.rfind('\n');
  if (last == std::string::npos) return Internal("curl printed no status line: " + r.output);
  HttpAnswer answer;
  answer.body = r.output.substr(0, last);
  std::string line = r.output.substr(last + 1);
  size_t space = line.find(' ');
  answer.status = std::atoi(line.substr(0, space).c_str());
  answer.content_type = space == std::string::npos ? "" : line.substr(space + 1);
  return answer;
}

}  // namespace tessera::demo
