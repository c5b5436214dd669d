// The configuration keys of `tessera scheduler` (all under `scheduler.`).
//
// Added to the binary's schema through the KeyGroup in src/cli/registry.cc; read back with the
// typed getters of config::Config. See docs/scheduler.md for the table of keys.
#pragma once

#include "config/schema.h"

namespace tessera::scheduler {

// Adds the keys and the rules across them (config_rules.cc).
void AddSchedulerKeys(config::Schema& schema);
void AddSchedulerRules(config::Schema& schema);

}  // namespace tessera::scheduler
