#include "inspect/json_to_yaml.h"

#include <cctype>

#include "common/strings.h"

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

// Words YAML 1.1 (which kubectl's parser follows) reads as something other than a string.
bool Special(const std::string& text) {
  std::string lower = ToLower(text);
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}) {
    if (lower == word) return true;
  }
  return false;
}

std::string Scalar(const json& value) {
  if (!value.is_string()) return value.dump();
  const std::string& text = value.get_ref<const std::string&>();
  bool plain = !text.empty() && isalpha(static_cast<unsigned char>(text[0])) && !Special(text);
  for (char c : text) {
    plain = plain && (isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
                      c == '/');
  }
  return plain ? text : value.dump();
}

bool Nested(const json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

void Emit(const json& value, int indent, std::string& out);

// A nested value as a list item: its first line starts with "- " where its indentation was.
void EmitItem(const json& item, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (!Nested(item)) {
    out += pad + "- " + (item.is_object() ? "{}" : item.is_array() ? "[]" : Scalar(item)) + "\n";
    return;
  }
  std::string inner;
  Emit(item, indent + 2, inner);
  out += pad + "- " + inner.substr(static_cast<size_t>(indent) + 2);
}

void Emit(const json& value, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (value.is_array()) {
    for (const json& item : value) EmitItem(item, indent, out);
    return;
  }
  for (const auto& [key, member] : value.items()) {
    std::string name = Scalar(json(key));
    if (!Nested(member)) {
      out += pad + name + ": " +
             (member.is_object()  ? "{}"
              : member.is_array() ? "[]"
                                  : Scalar(member)) +
             "\n";
    } else {
      out += pad + name + ":\n";
      Emit(member, member.is_array() ? indent : indent + 2, out);
    }
  }
}

}  // namespace

std::string JsonToYaml(const json& value) {
  if (!Nested(value)) {
    return (value.is_object() ? "{}" : value.is_array() ? "[]" : Scalar(value)) + "\n";
  }
  std::string out;
  Emit(value, 0, out);
  return out;
}

}  // namespace tessera::inspect
