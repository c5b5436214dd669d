#include "node/gpu/mig_info.h"

namespace tessera::node {

const char* MigModeName(MigMode mode) {
  switch (mode) {
    case MigMode::kNone:
      return "none";
    case MigMode::kFixed:
      return "fixed";
    case MigMode::kDynamic:
      return "dynamic";
  }
  return "?";
}

}  // namespace tessera::node
