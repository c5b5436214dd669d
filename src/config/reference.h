// The configuration reference in Markdown, generated from a Schema: one table per top-level
// group, with each key's type, default, environment variable, flags and help. docs/
// config-reference.md is this output (`tessera config reference`); a test keeps them equal.
#pragma once

#include <string>

#include "config/schema.h"

namespace tessera::config {

std::string MarkdownReference(const Schema& schema);

}  // namespace tessera::config
