#include "config/reference.h"

#include <map>
#include <vector>

namespace tessera::config {
namespace {

std::string Describe(const KeySpec& spec) {
  std::string text = spec.help;
  if (!spec.allowed.empty()) {
    text += "; one of";
    for (size_t i = 0; i < spec.allowed.size(); ++i) {
      text += (i ? ", `" : " `") + spec.allowed[i] + "`";
    }
  }
  auto number = [&spec](double v) { return FormatBound(spec, v); };
  if (spec.min && spec.max && *spec.min == *spec.max) {
    text += "; only " + number(*spec.min);
  } else if (spec.min && spec.max) {
    text += "; " + number(*spec.min) + " to " + number(*spec.max);
  } else if (spec.min) {
    text += "; at least " + number(*spec.min);
  } else if (spec.max) {
    text += "; at most " + number(*spec.max);
  }
  if (spec.non_empty) text += "; must not be empty";
  if (spec.type == Type::kString && spec.allowed.empty())
    text += " (also `" + Schema::EnvName(spec.path) + "_BASE64`)";
  // A '|' would end the table cell.
  std::string escaped;
  for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped;
}

}  // namespace

std::string MarkdownReference(const Schema& schema) {
  std::map<std::string, std::vector<const KeySpec*>> groups;
  for (const KeySpec& spec : schema.keys()) {
    groups[spec.path.substr(0, spec.path.find('.'))].push_back(&spec);
  }
  std::string out =
      "# Configuration reference\n\n"
      "Generated from the schema by `tessera config reference`; do not edit by hand. How the\n"
      "sources combine (defaults < file < environment < flags) is in `configuration.md`.\n";
  for (const auto& [group, specs] : groups) {
    out += "\n## " + group + "\n\n";
    out += "| key | type | default | environment | flags | description |\n";
    out += "|---|---|---|---|---|---|\n";
    for (const KeySpec* spec : specs) {
      std::string flags = "`--" + spec->path + "`";
      for (const std::string& f : spec->flags)
        flags += (f.size() == 1 ? ", `-" : ", `--") + f + "`";
      std::string def = spec->default_value.empty() ? "" : "`" + spec->default_value + "`";
      out += "| `" + spec->path + "` | " + TypeName(spec->type) + " | " + def + " | `" +
             Schema::EnvName(spec->path) + "` | " + flags + " | " + Describe(*spec) + " |\n";
    }
  }
  return out;
}

}  // namespace tessera::config
