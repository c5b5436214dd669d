// The configuration schema: every key declared once, with its type, default and help.
//
// Each part contributes its keys (for example scheduler/config_keys.cc); the `tessera` binary
// assembles them into one Schema. From the schema alone the loader derives the environment name
// (TESSERA_ + path upper-cased, '.' and '-' turned into '_'), the flag (--path, plus an optional
// short alias) and the file path (nested maps or dotted keys), so no key needs registration code
// anywhere else. Not thread-safe while being built; read-only afterwards.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/value.h"

namespace tessera::config {

struct KeySpec {
  std::string path;  // "node.device-split-count"
  Type type = Type::kString;
  std::string default_value;  // text, parsed like any other source; "" for an empty string/list
  std::string help;
  std::vector<std::string> allowed;  // for strings: the only values accepted (empty = any)
  bool non_empty = false;            // for strings: the empty string is refused
  // Inclusive bounds for numbers, bytes (in bytes) and durations (in seconds).
  std::optional<double> min;
  std::optional<double> max;
  std::vector<std::string> flags;  // extra flag names, e.g. "kubeconfig" or "d" (one letter = -d)
  bool secret = false;             // printed as "<N bytes, hidden>"
};

class Config;

// A check across keys (or of one key's form), run once every source is loaded and every key is
// valid on its own. Its error names each key involved with its value and source
// (Config::Describe) and says what is allowed.
using Rule = std::function<Status(const Config&)>;

class Schema {
 public:
  // Adds a key; a duplicate path or a default that does not parse is a programming error and
  // aborts with a message.
  void Add(KeySpec spec);

  void AddRule(Rule rule) { rules_.push_back(std::move(rule)); }
  const std::vector<Rule>& rules() const { return rules_; }

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
  std::vector<Rule> rules_;
  std::map<std::string, size_t> by_path_;
  std::map<std::string, size_t> by_env_;
  std::map<std::string, size_t> by_flag_;
};

// A bound of `spec` (min or max) in the key's own units: "1Ki", "1ms", "16".
std::string FormatBound(const KeySpec& spec, double bound);

// Keys every command has: log.level, log.format.
void AddCommonKeys(Schema& schema);

}  // namespace tessera::config
