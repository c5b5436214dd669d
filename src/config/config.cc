#include "config/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/strings.h"

namespace tessera::config {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "config: %s\n", message.c_str());
  std::abort();
}

std::string JoinAllowed(const std::vector<std::string>& allowed) {
  std::string out;
  for (size_t i = 0; i < allowed.size(); ++i) out += (i ? ", " : "") + allowed[i];
  return out;
}

double AsNumber(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* b = std::get_if<Bytes>(&v)) return static_cast<double>(b->value);
  if (const auto* t = std::get_if<Duration>(&v)) return std::chrono::duration<double>(*t).count();
  return 0;
}

}  // namespace

std::string Source::ToString() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kFile:
      return "file " + where;
    case Kind::kEnv:
      return "env " + where;
    case Kind::kFlag:
      return "flag " + where;
  }
  return "?";
}

Config::Config(const Schema& schema) : schema_(&schema) {
  for (const KeySpec& spec : schema.keys()) {
    Result<Value> v = ParseValue(spec.type, spec.default_value);
    Value value = v.ok() ? *v : Value(std::string());
    values_.emplace(spec.path, Entry{std::move(value), Source{}});
  }
}

const Config::Entry& Config::Get(const std::string& path, Type type) const {
  const KeySpec* spec = schema_->Find(path);
  if (!spec) Die("key " + path + " is not declared in the schema");
  if (spec->type != type) {
    Die("key " + path + " is a " + TypeName(spec->type) + ", read as " + TypeName(type));
  }
  return values_.at(path);
}

bool Config::GetBool(const std::string& p) const {
  return std::get<bool>(Get(p, Type::kBool).value);
}
int64_t Config::GetInt(const std::string& p) const {
  return std::get<int64_t>(Get(p, Type::kInt).value);
}
double Config::GetFloat(const std::string& p) const {
  return std::get<double>(Get(p, Type::kFloat).value);
}
const std::string& Config::GetString(const std::string& p) const {
  return std::get<std::string>(Get(p, Type::kString).value);
}
Duration Config::GetDuration(const std::string& p) const {
  return std::get<Duration>(Get(p, Type::kDuration).value);
}
uint64_t Config::GetBytes(const std::string& p) const {
  return std::get<Bytes>(Get(p, Type::kBytes).value).value;
}
const std::vector<std::string>& Config::GetList(const std::string& p) const {
  return std::get<std::vector<std::string>>(Get(p, Type::kList).value);
}

const Source& Config::SourceOf(const std::string& path) const {
  auto it = values_.find(path);
  if (it == values_.end()) Die("key " + path + " is not declared in the schema");
  return it->second.source;
}

std::string Config::ValueText(const std::string& path) const {
  auto it = values_.find(path);
  if (it == values_.end()) Die("key " + path + " is not declared in the schema");
  return FormatValue(it->second.value);
}

std::string Config::Describe(const std::string& path) const {
  return path + " \"" + ValueText(path) + "\" (" + SourceOf(path).ToString() + ")";
}

Status Config::Check(const KeySpec& spec, const Value& value, std::string_view text,
                     const Source& source) const {
  auto fail = [&](const std::string& expected) {
    return InvalidArgument("invalid value \"" + std::string(text) + "\" for " + spec.path + " (" +
                           source.ToString() + "): expected " + expected);
  };
  if (!spec.allowed.empty()) {
    const std::string& s = std::get<std::string>(value);
    if (std::find(spec.allowed.begin(), spec.allowed.end(), s) == spec.allowed.end()) {
      return fail("one of " + JoinAllowed(spec.allowed));
    }
  }
  if (spec.non_empty && std::get<std::string>(value).empty()) return fail("a non-empty value");
  if (spec.min || spec.max) {
    double n = AsNumber(value);
    if (spec.min && spec.max && *spec.min == *spec.max && n != *spec.min) {
      return fail(FormatBound(spec, *spec.min) + ", the only value allowed");
    }
    if (spec.min && n < *spec.min)
      return fail("a value of at least " + FormatBound(spec, *spec.min));
    if (spec.max && n > *spec.max)
      return fail("a value of at most " + FormatBound(spec, *spec.max));
  }
  return Status::Ok();
}

Status Config::Set(const std::string& path, std::string_view text, const Source& source) {
  const KeySpec* spec = schema_->Find(path);
  if (!spec) return InvalidArgument("unknown key " + path + " (" + source.ToString() + ")");
  Result<Value> v = ParseValue(spec->type, text);
  if (!v.ok()) {
    return InvalidArgument("invalid value \"" + std::string(text) + "\" for " + path + " (" +
                           source.ToString() + "): expected " + TypeExpectation(spec->type));
  }
  RETURN_IF_ERROR(Check(*spec, *v, text, source));
  values_[path] = Entry{std::move(*v), source};
  return Status::Ok();
}

Status Config::SetList(const std::string& path, const std::vector<std::string>& items,
                       const Source& source) {
  const KeySpec* spec = schema_->Find(path);
  if (!spec) return InvalidArgument("unknown key " + path + " (" + source.ToString() + ")");
  if (spec->type != Type::kList) {
    return InvalidArgument("invalid value for " + path + " (" + source.ToString() +
                           "): got a list, expected " + TypeExpectation(spec->type));
  }
  values_[path] = Entry{Value(items), source};
  return Status::Ok();
}

std::string Config::Print(const std::vector<std::string>& prefixes) const {
  struct Row {
    std::string key, value, source;
  };
  std::vector<Row> rows;
  size_t key_width = 3, value_width = 5;
  for (const KeySpec& spec : schema_->keys()) {
    bool wanted = prefixes.empty();
    for (const std::string& p : prefixes) wanted = wanted || StartsWith(spec.path, p + ".");
    if (!wanted) continue;
    const Entry& e = values_.at(spec.path);
    std::string value = FormatValue(e.value);
    if (spec.secret && !value.empty()) {
      value = "<" + std::to_string(value.size()) + " bytes, hidden>";
    } else if (value.find('\n') != std::string::npos) {
      value = "<" + std::to_string(value.size()) + " bytes, multi-line>";
    } else if (value.empty()) {
      value = "\"\"";
    }
    rows.push_back({spec.path, value, e.source.ToString()});
    key_width = std::max(key_width, spec.path.size());
    value_width = std::max(value_width, rows.back().value.size());
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  auto pad = [](std::string s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::string out = pad("KEY", key_width) + pad("VALUE", value_width) + "SOURCE\n";
  for (const Row& r : rows)
    out += pad(r.key, key_width) + pad(r.value, value_width) + r.source + "\n";
  return out;
}

}  // namespace tessera::config
