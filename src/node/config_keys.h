// The node.* configuration keys of `tessera node` and the AgentOptions they give.
//
// Thread-compatible: AddConfigKeys while building the schema; OptionsFromConfig on a loaded Config.
#pragma once

#include "common/status.h"
#include "config/config.h"
#include "config/schema.h"
#include "node/agent.h"

namespace tessera::node {

void AddConfigKeys(config::Schema& schema);

// Validates what the schema's keys cannot (the memory scaling within 1 to 10, also a rule of the
// schema; a node name; at least one resource) and builds the options. `env_node_name` is
// $NODE_NAME, the default of node.node-name.
Result<AgentOptions> OptionsFromConfig(const config::Config& config,
                                       const std::string& env_node_name);

}  // namespace tessera::node
