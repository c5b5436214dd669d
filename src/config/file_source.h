// Reads a configuration file (YAML or TOML, chosen by extension) into flat entries.
//
// Nested maps/tables become dotted paths ("node: {device-split-count: 4}" and
// "node.device-split-count: 4" are the same key). Every entry keeps the line it came from, so
// errors can point at "file:line". Scalars stay text: the schema decides their type.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::config {

struct FileEntry {
  std::string path;
  std::string text;                              // scalar value, when `list` is empty
  std::optional<std::vector<std::string>> list;  // sequence/array value
  int line = 0;
};

// Extensions: .yaml/.yml or .toml. A syntax error names the file and line.
Result<std::vector<FileEntry>> ReadConfigFile(const std::string& file);

}  // namespace tessera::config
