// JSON as YAML, in the layout `kubectl -o yaml` prints (block style, keys in the JSON's order,
// a list under a key at the key's indentation). A string is plain when YAML reads it back as the
// same string, else double-quoted (JSON's quoting is valid YAML). Pure: thread-safe.
//
//   totals:
//     gpus: 6
//   nodes:
//   - name: gpu-a
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::inspect {

std::string JsonToYaml(const nlohmann::json& value);

}  // namespace tessera::inspect
