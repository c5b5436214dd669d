// `tessera config [--config FILE] [--for COMMAND]`: prints the effective configuration of a
// command (all keys when --for is absent) with the source of every value.
#pragma once

#include "cli/command.h"

namespace tessera::cli {

Command ConfigCommand();

}  // namespace tessera::cli
