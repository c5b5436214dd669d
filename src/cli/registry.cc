#include "cli/command.h"
#include "cli/config_command.h"

namespace tessera::cli {

const std::vector<KeyGroup>& KeyGroups() {
  static const std::vector<KeyGroup> groups = {
      {"log", &config::AddCommonKeys},
  };
  return groups;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      ConfigCommand(),
  };
  return commands;
}

const config::Schema& FullSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    for (const KeyGroup& g : KeyGroups()) g.add(s);
    return s;
  }();
  return schema;
}

}  // namespace tessera::cli
