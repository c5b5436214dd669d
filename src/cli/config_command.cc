#include "cli/config_command.h"

#include <iostream>

#include "config/reference.h"

namespace tessera::cli {

Command ConfigCommand() {
  return Command{
      .name = "config",
      .summary =
          "print the effective configuration and where each value came from "
          "(`config reference`: every key, in Markdown)",
      .key_prefixes = {},
      .run =
          [](const config::Config& cfg, const std::vector<std::string>& args) {
            std::vector<std::string> prefixes;
            if (args.size() == 1 && args[0] == "reference") {
              std::cout << config::MarkdownReference(cfg.schema());
              return 0;
            }
            if (!args.empty()) {
              // `--for COMMAND` arrives here as the positional "for=COMMAND" form, see main.cc.
              const std::string& target = args[0];
              const Command* found = nullptr;
              for (const Command& c : Commands()) {
                if (c.name == target) found = &c;
              }
              if (!found) {
                std::cerr << "tessera config: unknown command \"" << target << "\" for --for\n";
                return 2;
              }
              prefixes = found->key_prefixes;
              prefixes.insert(prefixes.begin(), "log");
            }
            std::cout << cfg.Print(prefixes);
            return 0;
          },
  };
}

}  // namespace tessera::cli
