// A subcommand of the `tessera` multi-call binary, as the part that owns it declares it: the
// parts (node, scheduler, inspect, certgen, demo) each give one, and cli/ lists them (registry.cc)
// and runs the one asked for, with its effective configuration. Below the parts, so that they
// need not include cli/, which includes them all. A plain value; thread-compatible.
//
//   config::Command DemoCommand() {
//     return {.name = "demo", .summary = "run the demo", .key_prefixes = {"demo"},
//             .run = [](const config::Config& c, const std::vector<std::string>&) {
//               return RunDemo(c);
//             }};
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace tessera::config {

struct Command {
  std::string name;
  std::string summary;
  // Key prefixes this command reads ("log" is added for every command); --print-config and
  // `tessera config --for NAME` print these.
  std::vector<std::string> key_prefixes;
  // Runs with the effective configuration and the positional arguments; returns the process's
  // exit code.
  std::function<int(const Config&, const std::vector<std::string>&)> run;
};

}  // namespace tessera::config
