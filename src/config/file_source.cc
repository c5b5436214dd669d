#include "config/file_source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include <toml.hpp>

#include "common/strings.h"

namespace tessera::config {
namespace {

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

Status FlattenYaml(const std::string& file, const YAML::Node& node, const std::string& prefix,
                   std::vector<FileEntry>& out) {
  const int line = node.Mark().line + 1;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return InvalidArgument(file + ":" + std::to_string(kv.first.Mark().line + 1) +
                                 ": keys must be plain strings");
        }
        RETURN_IF_ERROR(FlattenYaml(file, kv.second, Join(prefix, kv.first.Scalar()), out));
      }
      return Status::Ok();
    case YAML::NodeType::Sequence: {
      std::vector<std::string> items;
      for (const auto& item : node) {
        if (!item.IsScalar()) {
          return InvalidArgument(file + ":" + std::to_string(item.Mark().line + 1) + ": " + prefix +
                                 ": list items must be plain values");
        }
        items.push_back(item.Scalar());
      }
      out.push_back({prefix, "", std::move(items), line});
      return Status::Ok();
    }
    case YAML::NodeType::Scalar:
      out.push_back({prefix, node.Scalar(), std::nullopt, line});
      return Status::Ok();
    case YAML::NodeType::Null:
      if (!prefix.empty()) out.push_back({prefix, "", std::nullopt, line});
      return Status::Ok();
    case YAML::NodeType::Undefined:
      return Status::Ok();
  }
  return Status::Ok();
}

Result<std::vector<FileEntry>> ReadYaml(const std::string& file) {
  std::vector<FileEntry> out;
  try {
    YAML::Node root = YAML::LoadFile(file);
    if (!root.IsMap() && !root.IsNull()) {
      return InvalidArgument(file + ": the top level must be a map of keys");
    }
    RETURN_IF_ERROR(FlattenYaml(file, root, "", out));
  } catch (const YAML::BadFile&) {
    return NotFound("cannot read config file " + file);
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return out;
}

Result<std::string> TomlScalar(const std::string& file, const std::string& path,
                               const toml::value& v) {
  if (v.is_string()) return v.as_string().str;
  if (v.is_boolean()) return std::string(v.as_boolean() ? "true" : "false");
  if (v.is_integer()) return std::to_string(v.as_integer());
  if (v.is_floating()) {
    std::ostringstream s;
    s << v.as_floating();
    return s.str();
  }
  return InvalidArgument(file + ":" + std::to_string(v.location().line()) + ": " + path +
                         ": unsupported TOML value type");
}

Status FlattenToml(const std::string& file, const toml::value& node, const std::string& prefix,
                   std::vector<FileEntry>& out) {
  if (node.is_table()) {
    // Sorted, so that errors come in a stable order.
    std::vector<std::string> keys;
    for (const auto& kv : node.as_table()) keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    for (const std::string& k : keys) {
      RETURN_IF_ERROR(FlattenToml(file, node.as_table().at(k), Join(prefix, k), out));
    }
    return Status::Ok();
  }
  const int line = static_cast<int>(node.location().line());
  if (node.is_array()) {
    std::vector<std::string> items;
    for (const toml::value& item : node.as_array()) {
      ASSIGN_OR_RETURN(std::string text, TomlScalar(file, prefix, item));
      items.push_back(std::move(text));
    }
    out.push_back({prefix, "", std::move(items), line});
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(std::string text, TomlScalar(file, prefix, node));
  out.push_back({prefix, std::move(text), std::nullopt, line});
  return Status::Ok();
}

Result<std::vector<FileEntry>> ReadToml(const std::string& file) {
  std::ifstream in(file);
  if (!in) return NotFound("cannot read config file " + file);
  std::vector<FileEntry> out;
  try {
    toml::value root = toml::parse(in, file);
    RETURN_IF_ERROR(FlattenToml(file, root, "", out));
  } catch (const toml::syntax_error& e) {
    return InvalidArgument(file + ":" + std::to_string(e.location().line()) +
                           ": TOML syntax error:\n" + e.what());
  } catch (const toml::exception& e) {
    return InvalidArgument(file + ": " + e.what());
  }
  return out;
}

}  // namespace

Result<std::vector<FileEntry>> ReadConfigFile(const std::string& file) {
  std::string lower = ToLower(file);
  if (EndsWith(lower, ".yaml") || EndsWith(lower, ".yml")) return ReadYaml(file);
  if (EndsWith(lower, ".toml")) return ReadToml(file);
  return InvalidArgument("config file " + file +
                         ": unknown format (the name must end in .yaml, .yml or .toml)");
}

}  // namespace tessera::config
