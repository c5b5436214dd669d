// The configuration schema: every key declared once, with its type, default and help.
//
// Each part contributes its keys (for example scheduler/config_keys.cc); the `tessera` binary
// assembles them into one Schema. From the schema alone the loader derives the environment name
// (TESSERA_ + path upper-cased, '.' and '-' turned into '_'), the flag (--path, plus an optional
// short alias) and the file path (nested maps or dotted keys), so no key needs registration code
// anywhere else. Not thread-safe while being built; read-only afterwards.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"

namespace tessera::config {

struct KeySpec {
  std::string path;  // "node.device-split-count"
  Type type = Type::kString;
  std::string default_value;  // text, parsed like any other source; "" for an empty string/list
  std::string help;
  std::vector<std::string> allowed;  // for strings: the only values accepted (empty = any)
  std::optional<double> min;         // for numbers: inclusive bounds
  std::optional<double> max;
  std::vector<std::string> flags;  // extra flag names, e.g. "kubeconfig" or "d" (one letter = -d)
  bool secret = false;             // printed as "<N bytes, hidden>"
};

class Schema {
 public:
  // Adds a key; a duplicate path or a default that does not parse is a programming error and
  // aborts with a message.
  void Add(KeySpec spec);

  const KeySpec* Find(const std::string& path) const;
  // The key whose environment name is `env_name`, or nullptr.
  const KeySpec* FindByEnv(const std::string& env_name) const;
  // The key a flag name (without dashes) refers to: its path or one of its aliases.
  const KeySpec* FindByFlag(const std::string& flag) const;

  const std::vector<KeySpec>& keys() const { return keys_; }
  std::vector<std::string> Paths() const;
  std::vector<std::string> EnvNames() const;
  std::vector<std::string> FlagNames() const;

  static std::string EnvName(const std::string& path);

 private:
  std::vector<KeySpec> keys_;
  std::map<std::string, size_t> by_path_;
  std::map<std::string, size_t> by_env_;
  std::map<std::string, size_t> by_flag_;
};

// Keys every command has: log.level, log.format.
void AddCommonKeys(Schema& schema);

}  // namespace tessera::config
