#include "config/loader.h"

#include <algorithm>
#include <cstring>
#include <regex>

#include "abi/library_env.h"
#include "common/strings.h"
#include "config/file_source.h"

extern char** environ;

namespace tessera::config {
namespace {

constexpr std::string_view kEnvPrefix = "TESSERA_";
constexpr std::string_view kBase64Suffix = "_BASE64";

std::string Suggest(const std::string& word, const std::vector<std::string>& candidates,
                    const std::string& prefix = "") {
  auto best = ClosestMatch(word, candidates);
  return best ? "; did you mean " + prefix + *best + "?" : "";
}

bool IsLibraryVariable(const std::string& name) {
  static const char* const kNames[] = TESSERA_LIBRARY_ENV_NAMES;
  for (const char* const* n = kNames; *n; ++n) {
    // TESSERA_LOG_LEVEL is both: a key of every command and read by the library.
    if (name == *n) return true;
  }
  return false;
}

// The variables Kubernetes gives every container for each Service of its namespace (service
// links): <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT[_<PORT NAME>], <NAME>_PORT and
// <NAME>_PORT_<NUMBER>_<PROTOCOL>[_PROTO|_PORT|_ADDR]. deploy/'s Service tessera-scheduler gives
// Tessera's own pods TESSERA_SCHEDULER_SERVICE_HOST and the like; they are not settings.
bool IsServiceLinkVariable(const std::string& name) {
  static const std::regex kLink(
      "TESSERA_[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_("
      "PROTO|PORT|ADDR))?)?)");
  return std::regex_match(name, kLink);
}

void ApplyFile(const Schema& schema, const std::string& file, Config& config,
               std::vector<std::string>& errors) {
  Result<std::vector<FileEntry>> entries = ReadConfigFile(file);
  if (!entries.ok()) {
    errors.push_back(entries.status().message());
    return;
  }
  for (const FileEntry& e : *entries) {
    Source source{Source::Kind::kFile, file + ":" + std::to_string(e.line)};
    if (!schema.Find(e.path)) {
      errors.push_back("unknown key " + e.path + " in " + source.where +
                       Suggest(e.path, schema.Paths()));
      continue;
    }
    Status s = e.list && schema.Find(e.path)->type == Type::kList
                   ? config.SetList(e.path, *e.list, source)
               : e.list ? InvalidArgument("invalid value for " + e.path + " (" + source.ToString() +
                                          "): got a list, expected " +
                                          TypeExpectation(schema.Find(e.path)->type))
                        : config.Set(e.path, e.text, source);
    if (!s.ok()) errors.push_back(s.message());
  }
}

void ApplyEnvironment(const Schema& schema, const Environment& env, Config& config,
                      std::vector<std::string>& errors) {
  for (const auto& [name, value] : env) {
    if (!StartsWith(name, kEnvPrefix)) continue;
    const KeySpec* spec = schema.FindByEnv(name);
    if (spec) {
      if (spec->type == Type::kString && env.count(name + std::string(kBase64Suffix))) {
        errors.push_back(name + " and " + name + std::string(kBase64Suffix) +
                         " are both set; set only one of them");
        continue;
      }
      Status s = config.Set(spec->path, value, {Source::Kind::kEnv, name});
      if (!s.ok()) errors.push_back(s.message());
      continue;
    }
    if (EndsWith(name, kBase64Suffix)) {
      std::string base = name.substr(0, name.size() - kBase64Suffix.size());
      if (const KeySpec* b = schema.FindByEnv(base)) {
        if (b->type != Type::kString) {
          errors.push_back(name + ": base64 values are only for string keys; " + b->path + " is " +
                           TypeExpectation(b->type) + ", set " + base + " instead");
          continue;
        }
        if (env.count(base)) continue;  // reported above
        std::optional<std::string> decoded = Base64Decode(value);
        if (!decoded) {
          errors.push_back("invalid value for " + b->path + " (env " + name +
                           "): expected base64 text (RFC 4648, with padding)");
          continue;
        }
        Status s = config.Set(b->path, *decoded, {Source::Kind::kEnv, name});
        if (!s.ok()) errors.push_back(s.message());
        continue;
      }
    }
    if (IsLibraryVariable(name) || IsServiceLinkVariable(name)) continue;
    errors.push_back("unknown environment variable " + name + Suggest(name, schema.EnvNames()));
  }
}

// One key set by a flag; repeated list flags accumulate into one setting.
struct FlagSetting {
  std::string path;
  std::string text;
  std::vector<std::string> list;
  bool is_list = false;
  Source source;
};

// Parses flags into settings (checked against the schema's flag names, not yet typed) and fills
// the positional arguments, --config, --print-config and --help of `out`.
std::vector<FlagSetting> ParseFlags(const Schema& schema, const std::vector<std::string>& args,
                                    Loaded& out, std::vector<std::string>& errors) {
  std::vector<FlagSetting> settings;
  std::map<std::string, size_t> list_index;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    bool long_form = StartsWith(arg, "--");
    std::string body = arg.substr(long_form ? 2 : 1);
    std::optional<std::string> inline_value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    if (body == "help" || body == "h") {
      out.help = true;
      continue;
    }
    if (body == "print-config" && !inline_value) {
      out.print_config = true;
      continue;
    }
    auto take_value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 < args.size()) return args[++i];
      errors.push_back("flag " + arg + " needs a value");
      return std::nullopt;
    };
    if (body == "config") {
      if (auto v = take_value()) out.config_file = *v;
      continue;
    }
    const KeySpec* spec = (long_form || body.size() == 1) ? schema.FindByFlag(body) : nullptr;
    if (!spec) {
      errors.push_back("unknown flag " + arg + Suggest(body, schema.FlagNames(), "--"));
      continue;
    }
    Source source{Source::Kind::kFlag, std::string(long_form ? "--" : "-") + body};
    if (spec->type == Type::kBool && !inline_value) {
      settings.push_back({spec->path, "true", {}, false, source});
      continue;
    }
    std::optional<std::string> value = take_value();
    if (!value) continue;
    if (spec->type == Type::kList) {
      auto [it, fresh] = list_index.emplace(spec->path, settings.size());
      if (fresh) settings.push_back({spec->path, "", {}, true, source});
      for (std::string& item : ParseList(*value)) settings[it->second].list.push_back(item);
      continue;
    }
    settings.push_back({spec->path, *value, {}, false, source});
  }
  return settings;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string message;
  for (const std::string& l : lines) message += (message.empty() ? "" : "\n") + l;
  return message;
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

Result<Loaded> Load(const Schema& schema, const std::vector<std::string>& args,
                    const Environment& env) {
  Loaded out{Config(schema), {}, "", false, false};
  std::vector<std::string> errors;

  // Flags are parsed first (they name the file) and applied last (they win).
  std::vector<FlagSetting> flags = ParseFlags(schema, args, out, errors);
  if (!out.config_file.empty()) ApplyFile(schema, out.config_file, out.config, errors);
  ApplyEnvironment(schema, env, out.config, errors);
  for (const FlagSetting& f : flags) {
    Status s = f.is_list ? out.config.SetList(f.path, f.list, f.source)
                         : out.config.Set(f.path, f.text, f.source);
    if (!s.ok()) errors.push_back(s.message());
  }
  if (errors.empty()) {
    // Rules compare keys, so they run only on keys that are each valid.
    for (const Rule& rule : schema.rules()) {
      Status s = rule(out.config);
      if (!s.ok()) errors.push_back(s.message());
    }
  }
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  return out;
}

std::string FlagHelp(const Schema& schema, const std::vector<std::string>& prefixes) {
  std::string out;
  for (const KeySpec& spec : schema.keys()) {
    bool wanted = prefixes.empty();
    for (const std::string& p : prefixes) wanted = wanted || StartsWith(spec.path, p + ".");
    if (!wanted) continue;
    std::string names = "--" + spec.path;
    for (const std::string& f : spec.flags) names += f.size() == 1 ? ", -" + f : ", --" + f;
    if (spec.type != Type::kBool) names += std::string(" ") + TypeName(spec.type);
    out += "  " + names;
    out += std::string(names.size() < 44 ? 44 - names.size() : 1, ' ');
    out += spec.help;
    if (!spec.default_value.empty()) out += " (default " + spec.default_value + ")";
    out += "\n";
  }
  return out;
}

}  // namespace tessera::config
