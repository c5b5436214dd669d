// The schema of `tessera scheduler` (the common keys and the scheduler's) for the tests that load
// a configuration. Test-only.
#pragma once

#include "config/schema.h"
#include "scheduler/config_keys.h"

namespace tessera::scheduler::testing {

// A Config refers to its schema, so this one lives as long as the test program.
inline const config::Schema& SchedulerSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    config::AddCommonKeys(s);
    AddSchedulerKeys(s);
    return s;
  }();
  return schema;
}

}  // namespace tessera::scheduler::testing
