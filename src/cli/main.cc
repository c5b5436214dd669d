// The `tessera` multi-call binary: picks a command by its first argument, loads its configuration
// and runs it. Only wiring lives here. (The kubectl plugin is its own program: src/kubectl_plugin.)
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/strings.h"
#include "config/loader.h"
#include "log/log.h"

namespace tessera::cli {
namespace {

void PrintUsage(std::ostream& out) {
  out << "usage: tessera COMMAND [flags]\n\ncommands:\n";
  out << "  version      print the version\n";
  for (const Command& c : Commands()) {
    out << "  " << c.name << std::string(c.name.size() < 13 ? 13 - c.name.size() : 1, ' ')
        << c.summary << "\n";
  }
  out << "\nEvery command takes --config FILE (YAML or TOML), --print-config and --help.\n"
         "Every key can also be set as TESSERA_<KEY> in the environment (see `tessera config`).\n";
}

// Pulls `--for NAME` / `--for=NAME` out of `args` (only `tessera config` has it).
std::vector<std::string> TakeForFlag(std::vector<std::string>& args, bool& ok) {
  std::vector<std::string> out;
  ok = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--for") {
      if (i + 1 >= args.size()) {
        ok = false;
        return out;
      }
      out.push_back(args[i + 1]);
      args.erase(args.begin() + i, args.begin() + i + 2);
      --i;
    } else if (StartsWith(args[i], "--for=")) {
      out.push_back(args[i].substr(6));
      args.erase(args.begin() + i);
      --i;
    }
  }
  return out;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    PrintUsage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  std::string name = args[0];
  args.erase(args.begin());
  if (name == "version" || name == "--version") {
    std::cout << "tessera " << TESSERA_VERSION << "\n";
    return 0;
  }

  const Command* command = nullptr;
  std::vector<std::string> names;
  for (const Command& c : Commands()) {
    names.push_back(c.name);
    if (c.name == name) command = &c;
  }
  if (!command) {
    auto best = ClosestMatch(name, names);
    std::cerr << "tessera: unknown command \"" << name << "\""
              << (best ? "; did you mean \"" + *best + "\"?" : "") << "\n\n";
    PrintUsage(std::cerr);
    return 2;
  }

  std::vector<std::string> extra;
  if (command->name == "config") {
    bool ok = true;
    extra = TakeForFlag(args, ok);
    if (!ok) {
      std::cerr << "tessera config: flag --for needs a command name\n";
      return 2;
    }
  }

  Result<config::Loaded> loaded = config::Load(FullSchema(), args, config::ProcessEnvironment());
  if (!loaded.ok()) {
    std::cerr << "tessera " << name << ": configuration error:\n"
              << loaded.status().message() << "\n";
    return 2;
  }
  std::vector<std::string> prefixes = command->key_prefixes;
  if (!prefixes.empty()) prefixes.insert(prefixes.begin(), "log");
  if (loaded->help) {
    std::cout << "usage: tessera " << name << " [flags]\n"
              << command->summary << "\n\nflags:\n"
              << config::FlagHelp(FullSchema(), prefixes);
    return 0;
  }
  const config::Config& cfg = loaded->config;
  log::Configure(*log::ParseLevel(cfg.GetString("log.level")),
                 *log::ParseFormat(cfg.GetString("log.format")));
  if (loaded->print_config) {
    std::cout << cfg.Print(prefixes);
    return 0;
  }
  std::vector<std::string> positional = extra;
  positional.insert(positional.end(), loaded->positional.begin(), loaded->positional.end());
  return command->run(cfg, positional);
}

}  // namespace
}  // namespace tessera::cli

int main(int argc, char** argv) {
  return tessera::cli::Main(argc, argv);
}
