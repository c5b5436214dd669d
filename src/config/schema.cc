#include "config/schema.h"

#include <cstdio>
#include <cstdlib>

#include "common/strings.h"

namespace tessera::config {

std::string Schema::EnvName(const std::string& path) {
  std::string name = "TESSERA_" + ToUpper(path);
  for (char& c : name) {
    if (c == '.' || c == '-') c = '_';
  }
  return name;
}

std::string FormatBound(const KeySpec& spec, double bound) {
  if (spec.type == Type::kBytes) return FormatBytes(static_cast<uint64_t>(bound));
  if (spec.type == Type::kDuration) {
    return FormatDuration(
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(bound)));
  }
  return FormatValue(Value(bound));
}

void Schema::Add(KeySpec spec) {
  auto die = [&](const std::string& why) {
    std::fprintf(stderr, "config schema: key %s: %s\n", spec.path.c_str(), why.c_str());
    std::abort();
  };
  if (by_path_.count(spec.path)) die("declared twice");
  if (by_env_.count(EnvName(spec.path))) die("environment name collides with another key");
  if (!ParseValue(spec.type, spec.default_value).ok() &&
      !(spec.default_value.empty() && spec.type != Type::kBool)) {
    die("default \"" + spec.default_value + "\" is not " + TypeExpectation(spec.type));
  }
  size_t index = keys_.size();
  by_path_[spec.path] = index;
  by_env_[EnvName(spec.path)] = index;
  by_flag_[spec.path] = index;
  for (const std::string& f : spec.flags) {
    if (by_flag_.count(f)) die("flag --" + f + " already used");
    by_flag_[f] = index;
  }
  keys_.push_back(std::move(spec));
}

const KeySpec* Schema::Find(const std::string& path) const {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? nullptr : &keys_[it->second];
}

const KeySpec* Schema::FindByEnv(const std::string& env_name) const {
  auto it = by_env_.find(env_name);
  return it == by_env_.end() ? nullptr : &keys_[it->second];
}

const KeySpec* Schema::FindByFlag(const std::string& flag) const {
  auto it = by_flag_.find(flag);
  return it == by_flag_.end() ? nullptr : &keys_[it->second];
}

std::vector<std::string> Schema::Paths() const {
  std::vector<std::string> out;
  for (const KeySpec& k : keys_) out.push_back(k.path);
  return out;
}

std::vector<std::string> Schema::EnvNames() const {
  std::vector<std::string> out;
  for (const auto& [name, index] : by_env_) out.push_back(name);
  return out;
}

std::vector<std::string> Schema::FlagNames() const {
  std::vector<std::string> out;
  for (const auto& [name, index] : by_flag_) out.push_back(name);
  return out;
}

void AddCommonKeys(Schema& schema) {
  schema.Add({.path = "log.level",
              .type = Type::kString,
              .default_value = "info",
              .help = "Least severe level that is logged",
              .allowed = {"debug", "info", "warn", "error"}});
  schema.Add({.path = "log.format",
              .type = Type::kString,
              .default_value = "text",
              .help = "Log line format on stderr",
              .allowed = {"text", "json"}});
}

}  // namespace tessera::config
