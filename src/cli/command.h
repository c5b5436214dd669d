// The `tessera` multi-call binary's subcommands and configuration keys.
//
// Each part declares one Command (config/command.h); main() picks it by the first argument, loads
// its configuration through the config layer and calls its `run`, whose result is the process's
// exit code.
#pragma once

#include <vector>

#include "config/command.h"
#include "config/schema.h"

namespace tessera::cli {

using config::Command;

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
