#include "demo/demo_command.h"

#include <iostream>

#include "demo/demo_story.h"

namespace tessera::demo {

config::Command DemoCommand() {
  return {.name = "demo",
          .summary =
              "run Tessera on a real Kubernetes cluster on this machine (the dev cluster, as "
              "root) and narrate what it does",
          .key_prefixes = {"log"},
          .run = [](const config::Config&, const std::vector<std::string>& args) {
            if (!args.empty()) {
              std::cerr << "tessera demo takes no arguments (got \"" << args[0] << "\")\n";
              return 2;
            }
            return RunDemo(std::cout);
          }};
}

}  // namespace tessera::demo
