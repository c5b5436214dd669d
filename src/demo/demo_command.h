// `tessera demo`: a small cluster on this machine that shows Tessera end to end, narrated
// (docs/demo.md). Takes no keys of its own and no arguments; exit 0 when everything it showed
// happened as told, 1 otherwise, 2 on arguments.
#pragma once

#include "config/command.h"

namespace tessera::demo {

config::Command DemoCommand();

}  // namespace tessera::demo
