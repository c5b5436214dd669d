// Loads a Config from its four layers, lowest first:
//   built-in defaults < config file (--config FILE) < environment (TESSERA_*) < flags.
// This is the one place the precedence is written down.
// Environment: TESSERA_ + the path upper-cased with '.' and '-' as '_', or <NAME>_BASE64 for a
// string key (both at once is an error); the in-container library's variables
// (abi/library_env.h) are ignored, any other unknown TESSERA_* variable is an error that suggests
// the closest known name. Flags: --<path>=VALUE or --<path> VALUE and each key's aliases
// (--kubeconfig, -d); a bool flag alone means true; --config FILE, --print-config and -h/--help are
// handled here; everything else is returned as a positional argument. All errors of all layers
// are reported together, one per line. Examples: docs/configuration.md.
//
//   ASSIGN_OR_RETURN(Loaded loaded, Load(schema, args, ProcessEnvironment()));
//   if (loaded.help) std::cout << FlagHelp(schema, {"node"});
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/config.h"

namespace tessera::config {

using Environment = std::map<std::string, std::string>;

// The process environment as a map.
Environment ProcessEnvironment();

struct Loaded {
  Config config;
  std::vector<std::string> positional;
  std::string config_file;  // empty when none was given
  bool print_config = false;
  bool help = false;
};

Result<Loaded> Load(const Schema& schema, const std::vector<std::string>& args,
                    const Environment& env);

// "  --path VALUE   help (default X)" for each key under `prefixes`, for --help output.
std::string FlagHelp(const Schema& schema, const std::vector<std::string>& prefixes);

}  // namespace tessera::config
