#include "fakeapiserver/selectors.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace tessera::testing {

using nlohmann::json;

namespace {

// Splits on commas that are not inside parentheses.
std::vector<std::string> SplitTopLevel(std::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  parts.push_back(current);
  return parts;
}

bool ValidLabelPart(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

std::string Label(const json& object, const std::string& key, bool* present) {
  const json* labels = nullptr;
  if (object.contains("metadata") && object["metadata"].contains("labels")) {
    labels = &object["metadata"]["labels"];
  }
  if (labels == nullptr || !labels->is_object() || !labels->contains(key)) {
    *present = false;
    return "";
  }
  *present = true;
  const json& v = (*labels)[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

ApiResult<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  for (const std::string& raw : SplitTopLevel(text)) {
    std::string part(Trim(raw));
    auto bad = [&](const std::string& why) {
      return BadRequest("unable to parse requirement: \"" + part + "\": " + why);
    };
    Requirement req;
    if (part.empty()) return bad("empty requirement");
    size_t pos;
    if (part[0] == '!') {
      req.key = std::string(Trim(std::string_view(part).substr(1)));
      req.op = Op::kNotExists;
    } else if ((pos = part.find("!=")) != std::string::npos) {
      req.key = std::string(Trim(std::string_view(part).substr(0, pos)));
      req.op = Op::kNotEquals;
      req.values = {std::string(Trim(std::string_view(part).substr(pos + 2)))};
    } else if ((pos = part.find("==")) != std::string::npos) {
      req.key = std::string(Trim(std::string_view(part).substr(0, pos)));
      req.op = Op::kEquals;
      req.values = {std::string(Trim(std::string_view(part).substr(pos + 2)))};
    } else if ((pos = part.find('=')) != std::string::npos) {
      req.key = std::string(Trim(std::string_view(part).substr(0, pos)));
      req.op = Op::kEquals;
      req.values = {std::string(Trim(std::string_view(part).substr(pos + 1)))};
    } else if (part.find('(') != std::string::npos) {
      size_t open = part.find('(');
      if (part.back() != ')') return bad("expected ')' at the end of the value set");
      std::vector<std::string> words = Split(part.substr(0, open), ' ');
      if (words.size() != 2 || (words[1] != "in" && words[1] != "notin")) {
        return bad("expected `key in (v1,v2)` or `key notin (v1,v2)`");
      }
      req.key = words[0];
      req.op = words[1] == "in" ? Op::kIn : Op::kNotIn;
      for (const std::string& v : Split(part.substr(open + 1, part.size() - open - 2), ',')) {
        req.values.push_back(std::string(Trim(v)));
      }
      if (req.values.empty()) return bad("for 'in', 'notin' operators, values set can't be empty");
    } else {
      req.key = part;
      req.op = Op::kExists;
    }
    if (!ValidLabelPart(req.key)) return bad("invalid label key \"" + req.key + "\"");
    for (const std::string& v : req.values) {
      if (!v.empty() && !ValidLabelPart(v)) return bad("invalid label value \"" + v + "\"");
    }
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool LabelSelector::Matches(const json& object) const {
  for (const Requirement& r : requirements_) {
    bool present = false;
    std::string value = Label(object, r.key, &present);
    bool in_set = present && std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        ok = in_set;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !in_set;
        break;
      case Op::kExists:
        ok = present;
        break;
      case Op::kNotExists:
        ok = !present;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

ApiResult<FieldSelector> FieldSelector::Parse(std::string_view text,
                                              const std::vector<std::string>& allowed) {
  FieldSelector selector;
  if (Trim(text).empty()) return selector;
  for (const std::string& raw : Split(text, ',', /*skip_empty=*/false)) {
    std::string part(Trim(raw));
    Requirement req;
    size_t pos;
    size_t value_at;
    if ((pos = part.find("!=")) != std::string::npos) {
      req.equals = false;
      value_at = pos + 2;
    } else if ((pos = part.find("==")) != std::string::npos) {
      req.equals = true;
      value_at = pos + 2;
    } else if ((pos = part.find('=')) != std::string::npos) {
      req.equals = true;
      value_at = pos + 1;
    } else {
      return BadRequest("invalid field selector: \"" + part +
                        "\": expected field=value, field==value or field!=value");
    }
    req.field = std::string(Trim(std::string_view(part).substr(0, pos)));
    req.value = std::string(Trim(std::string_view(part).substr(value_at)));
    bool known = req.field == "metadata.name" || req.field == "metadata.namespace" ||
                 std::find(allowed.begin(), allowed.end(), req.field) != allowed.end();
    if (!known) return BadRequest("field label not supported: " + req.field);
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

std::string FieldSelector::FieldValue(const json& object, std::string_view path) {
  const json* node = &object;
  for (const std::string& step : Split(path, '.')) {
    if (!node->is_object() || !node->contains(step)) return "";
    node = &(*node)[step];
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_null()) return "";
  return node->dump();
}

bool FieldSelector::Matches(const json& object) const {
  for (const Requirement& r : requirements_) {
    if ((FieldValue(object, r.field) == r.value) != r.equals) return false;
  }
  return true;
}

}  // namespace tessera::testing
