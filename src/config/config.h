// Config: the effective value of every key of a Schema, and where each value came from.
//
// Built by the loader (loader.h) from defaults, file, environment and flags; read by the parts
// through typed getters. Asking for a key the schema does not declare, or with the wrong type, is
// a programming error and aborts. Thread-compatible: read-only after loading, so safe to share.
// The Schema must outlive the Config.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.h"
#include "config/value.h"

namespace tessera::config {

struct Source {
  enum class Kind { kDefault, kFile, kEnv, kFlag };
  Kind kind = Kind::kDefault;
  std::string where;             // "config.yaml:12", "TESSERA_LOG_LEVEL", "--log.level"
  std::string ToString() const;  // "default", "file config.yaml:12", "env TESSERA_X", "flag --x"
};

class Config {
 public:
  // Every key at its default.
  explicit Config(const Schema& schema);

  bool GetBool(const std::string& path) const;
  int64_t GetInt(const std::string& path) const;
  double GetFloat(const std::string& path) const;
  const std::string& GetString(const std::string& path) const;
  Duration GetDuration(const std::string& path) const;
  uint64_t GetBytes(const std::string& path) const;
  const std::vector<std::string>& GetList(const std::string& path) const;
  const Source& SourceOf(const std::string& path) const;
  // The value in its canonical text form, whatever its type.
  std::string ValueText(const std::string& path) const;
  // `path "value" (source)`, for messages: scheduler.name "" (env TESSERA_SCHEDULER_NAME).
  std::string Describe(const std::string& path) const;

  // Sets `path` from text given by `source`. On error nothing changes and the message names the
  // key, the source and what was expected.
  Status Set(const std::string& path, std::string_view text, const Source& source);
  Status SetList(const std::string& path, const std::vector<std::string>& items,
                 const Source& source);

  // One line per key whose path starts with one of `prefixes` (all keys when empty):
  // "key  value  source", aligned; secret values hidden.
  std::string Print(const std::vector<std::string>& prefixes = {}) const;

  const Schema& schema() const { return *schema_; }

 private:
  struct Entry {
    Value value;
    Source source;
  };
  const Entry& Get(const std::string& path, Type type) const;
  Status Check(const KeySpec& spec, const Value& value, std::string_view text,
               const Source& source) const;

  const Schema* schema_;
  std::map<std::string, Entry> values_;
};

}  // namespace tessera::config
