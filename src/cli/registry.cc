#include "certgen/certgen_command.h"
#include "cli/command.h"
#include "cli/config_command.h"
#include "demo/demo_command.h"
#include "inspect/inspect_command.h"
#include "kube/config_keys.h"
#include "node/config_keys.h"
#include "node/node_command.h"
#include "scheduler/config_keys.h"
#include "scheduler/scheduler_command.h"

namespace tessera::cli {

const std::vector<KeyGroup>& KeyGroups() {
  static const std::vector<KeyGroup> groups = {
      {"log", &config::AddCommonKeys}, {"certgen", &certgen::AddCertgenKeys},
      {"kube", &kube::AddConfigKeys},  {"inspect", &inspect::AddInspectKeys},
      {"node", &node::AddConfigKeys},  {"scheduler", &scheduler::AddSchedulerKeys},
  };
  return groups;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      certgen::CertgenCommand(), ConfigCommand(),     demo::DemoCommand(),
      inspect::InspectCommand(), node::NodeCommand(), scheduler::SchedulerCommand(),
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
