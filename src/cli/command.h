// A subcommand of the `tessera` multi-call binary.
//
// Each part registers one Command; main() picks it by the first argument (or by the program's
// name: `kubectl-tessera` runs `inspect`), loads its configuration through the config layer and
// calls Run. Commands return a process exit code.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/schema.h"

namespace tessera::cli {

struct Command {
  std::string name;
  std::string summary;
  // Key prefixes this command reads ("log" is added for every command); --print-config and
  // `tessera config --for NAME` print these.
  std::vector<std::string> key_prefixes;
  // Runs with the effective configuration and the positional arguments.
  std::function<int(const config::Config&, const std::vector<std::string>&)> run;
};

// Keys under one prefix ("scheduler", "kube"), contributed by the part that owns them.
struct KeyGroup {
  std::string prefix;
  void (*add)(config::Schema&);
};

// The commands compiled into this binary, in the order `tessera help` lists them, and the key
// groups of the whole binary. Both are listed in registry.cc, the one place that wires parts in.
const std::vector<Command>& Commands();
const std::vector<KeyGroup>& KeyGroups();

// The schema of the whole binary: every key of every command, so that a variable meant for
// another command (a shared DaemonSet environment) is known rather than an error.
const config::Schema& FullSchema();

}  // namespace tessera::cli
