// kubectl-tessera, the kubectl plugin: `kubectl tessera [inspect] ...` and `kubectl tessera
// version`, `kubectl tessera ui`. Its own small program: the inspect part, the API server client
// and the configuration layer, nothing of the scheduler's or node agent's servers. Only wiring
// lives here.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "inspect/inspect_command.h"
#include "inspect/resize_command.h"
#include "inspect/ui_command.h"
#include "inspect/version_command.h"
#include "kube/config_keys.h"
#include "log/log.h"

namespace tessera::kubectl_plugin {
namespace {

const config::Schema& PluginSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    config::AddCommonKeys(s);
    kube::AddConfigKeys(s);
    inspect::AddInspectKeys(s);
    inspect::AddUiKeys(s);
    inspect::AddResizeKeys(s);
    return s;
  }();
  return schema;
}

// kubectl's short flags with the value attached ("-ojson", "-nml") as the loader reads them
// ("-o", "json"). Bool flags ("-d") are left alone.
std::vector<std::string> SplitAttachedValues(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    const config::KeySpec* spec = arg.size() > 2 && arg[0] == '-' && arg[1] != '-' && arg[2] != '='
                                      ? PluginSchema().FindByFlag(arg.substr(1, 1))
                                      : nullptr;
    if (spec && spec->type != config::Type::kBool) {
      out.push_back(arg.substr(0, 2));
      out.push_back(arg.substr(2));
    } else {
      out.push_back(arg);
    }
  }
  return out;
}

void PrintUsage(std::ostream& out) {
  out << "usage: kubectl tessera [inspect] [NODE] [-d] [-o plain|wide|gib|json|yaml|jsonpath=...]\n"
         "                       [--no-headers] [-n NAMESPACE] [--context NAME]\n"
         "                       [--kubeconfig FILE] [--request-timeout 30s] [--scheduler URL]\n"
         "                       [--cluster NAME] [--user NAME] [-s URL] [--token TOKEN]\n"
         "                       [--certificate-authority FILE] [--insecure-skip-tls-verify]\n"
         "                       [--username U --password P] [--as USER [--as-group G]...\n"
         "                       [--as-uid UID]]\n"
         "       kubectl tessera version [--scheduler URL]\n"
         "       kubectl tessera ui [--port 8420] [--address 127.0.0.1] [--no-browser] [-n NS]\n"
         "       kubectl tessera resize pod/NAME [-c CONTAINER] [-n NS] [--memory 8Gi] "
         "[--cores 40] [--wait 30s]\n\n"
         "inspect (the default) shows the GPUs, their allocations and the pending pods;\n"
         "version prints the plugin's version and the Tessera scheduler's;\n"
         "ui serves the scheduler's web page here (through the API server) and opens "
         "it;\nresize changes a running container's GPU memory and compute per GPU.\n\nflags:\n"
      << config::FlagHelp(PluginSchema(), {"log", "inspect", "ui", "resize", "kube"});
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "inspect";
  if (!args.empty() && (args[0] == "inspect" || args[0] == "version" || args[0] == "ui" ||
                        args[0] == "resize" || args[0] == "help")) {
    command = args[0];
    args.erase(args.begin());
  }
  if (command == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  Result<config::Loaded> loaded =
      config::Load(PluginSchema(), SplitAttachedValues(args), config::ProcessEnvironment());
  if (!loaded.ok()) {
    std::cerr << "kubectl tessera " << command << ": " << loaded.status().message() << "\n";
    return 2;
  }
  if (loaded->help) {
    PrintUsage(std::cout);
    return 0;
  }
  const config::Config& cfg = loaded->config;
  log::Configure(*log::ParseLevel(cfg.GetString("log.level")),
                 *log::ParseFormat(cfg.GetString("log.format")));
  if (loaded->print_config) {
    std::cout << cfg.Print({"log", "inspect", "ui", "resize", "kube"});
    return 0;
  }
  if (command == "version") {
    if (!loaded->positional.empty()) {
      std::cerr << "kubectl tessera version: takes no arguments, got " << loaded->positional[0]
                << "\n";
      return 2;
    }
    return inspect::RunVersion(cfg, config::ProcessEnvironment(), TESSERA_VERSION, std::cout,
                               std::cerr);
  }
  if (command == "ui") {
    return inspect::RunUi(cfg, loaded->positional, config::ProcessEnvironment(),
                          inspect::ProcessUiHooks(), std::cout, std::cerr);
  }
  if (command == "resize") {
    return inspect::RunResize(cfg, loaded->positional, config::ProcessEnvironment(), std::cout,
                              std::cerr);
  }
  return inspect::RunInspect(cfg, loaded->positional, config::ProcessEnvironment(),
                             isatty(STDOUT_FILENO) == 1, std::cout, std::cerr);
}

}  // namespace
}  // namespace tessera::kubectl_plugin

int main(int argc, char** argv) {
  return tessera::kubectl_plugin::Main(argc, argv);
}
