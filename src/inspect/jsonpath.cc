#include "inspect/jsonpath.h"

#include <cctype>

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

struct Segment {
  enum Kind { kField, kAll, kIndex } kind = kField;
  std::string name;
  long index = 0;
};

struct Path {
  bool from_root = false;
  std::vector<Segment> segments;
};

Status Unsupported(const std::string& what, const std::string& action) {
  return InvalidArgument("jsonpath {" + action + "}: " + what +
                         " is not supported (supported: .field, [n], [*], .*, range/end, "
                         "\"text\")");
}

bool AllDigits(const std::string& text) {
  size_t start = !text.empty() && text[0] == '-' ? 1 : 0;
  if (start == text.size()) return false;
  for (size_t i = start; i < text.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

Result<Path> ParsePath(const std::string& action) {
  Path path;
  size_t i = 0;
  if (i < action.size() && (action[i] == '$' || action[i] == '@')) {
    path.from_root = action[i] == '$';
    ++i;
  }
  if (action == "." || action == "$" || action == "@") return path;
  if (i == action.size()) return InvalidArgument("jsonpath {" + action + "}: an empty path");
  if (action[i] != '.' && action[i] != '[') {
    return InvalidArgument("jsonpath {" + action +
                           "}: a path starts with '.', '$.' or '[' (for example {.nodes})");
  }
  while (i < action.size()) {
    if (action.compare(i, 2, "..") == 0) return Unsupported("recursive descent (..)", action);
    if (action[i] == '.') {
      ++i;
      if (i < action.size() && action[i] == '*') {
        path.segments.push_back({Segment::kAll, "", 0});
        ++i;
        continue;
      }
      std::string name;
      while (i < action.size() && action[i] != '.' && action[i] != '[') {
        if (action[i] == '\\' && i + 1 < action.size() && action[i + 1] == '.') ++i;
        if (action[i] == '(' || action[i] == ')' ||
            isspace(static_cast<unsigned char>(action[i]))) {
          return Unsupported(std::string("'") + action[i] + "' in a field name", action);
        }
        name += action[i++];
      }
      if (name.empty()) return InvalidArgument("jsonpath {" + action + "}: a '.' without a name");
      path.segments.push_back({Segment::kField, name, 0});
      continue;
    }
    if (action[i] == '[') {
      size_t close = action.find(']', i);
      if (close == std::string::npos) return InvalidArgument("jsonpath {" + action + "}: no ']'");
      std::string inside = action.substr(i + 1, close - i - 1);
      i = close + 1;
      if (inside == "*") {
        path.segments.push_back({Segment::kAll, "", 0});
      } else if (!inside.empty() && inside[0] == '?') {
        return Unsupported("a filter [" + inside + "]", action);
      } else if (inside.size() >= 2 && (inside[0] == '\'' || inside[0] == '"') &&
                 inside.back() == inside[0] && inside.find(',') == std::string::npos) {
        path.segments.push_back({Segment::kField, inside.substr(1, inside.size() - 2), 0});
      } else if (inside.find(':') != std::string::npos) {
        return Unsupported("a slice [" + inside + "]", action);
      } else if (inside.find(',') != std::string::npos) {
        return Unsupported("a union [" + inside + "]", action);
      } else if (AllDigits(inside)) {
        path.segments.push_back({Segment::kIndex, "", std::stol(inside)});
      } else {
        return InvalidArgument("jsonpath {" + action + "}: [" + inside +
                               "] is neither an index, [*] nor a quoted name");
      }
      continue;
    }
    return Unsupported(std::string("'") + action[i] + "'", action);
  }
  return path;
}

Result<std::string> ParseLiteral(const std::string& action) {
  if (action.size() < 2 || action.back() != '"') {
    return InvalidArgument("jsonpath {" + action + "}: an unterminated string");
  }
  std::string out;
  for (size_t i = 1; i + 1 < action.size(); ++i) {
    if (action[i] != '\\' || i + 2 >= action.size()) {
      out += action[i];
      continue;
    }
    char c = action[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
  }
  return out;
}

Result<std::vector<json>> Evaluate(const Path& path, const json& root, const json& current) {
  std::vector<json> values = {path.from_root ? root : current};
  for (const Segment& s : path.segments) {
    std::vector<json> next;
    for (const json& v : values) {
      switch (s.kind) {
        case Segment::kField:
          if (v.is_object() && v.contains(s.name)) next.push_back(v[s.name]);
          break;
        case Segment::kAll:
          if (v.is_array() || v.is_object()) {
            for (const json& item : v) next.push_back(item);
          }
          break;
        case Segment::kIndex: {
          if (!v.is_array()) break;
          long size = static_cast<long>(v.size());
          long at = s.index < 0 ? size + s.index : s.index;
          if (at < 0 || at >= size) {
            return InvalidArgument("jsonpath: index " + std::to_string(s.index) +
                                   " is out of range (the list has " + std::to_string(size) + ")");
          }
          next.push_back(v[static_cast<size_t>(at)]);
          break;
        }
      }
    }
    values = std::move(next);
  }
  return values;
}

std::string Print(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

struct JsonPath::Node {
  enum Kind { kText, kPath, kRange } kind = kText;
  std::string text;
  Path path;
  std::vector<Node> body;  // kRange
};

namespace {

Status Run(const std::vector<JsonPath::Node>& nodes, const json& root, const json& current,
           std::string& out) {
  for (const JsonPath::Node& node : nodes) {
    if (node.kind == JsonPath::Node::kText) {
      out += node.text;
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<json> values, Evaluate(node.path, root, current));
    if (node.kind == JsonPath::Node::kPath) {
      for (size_t i = 0; i < values.size(); ++i) out += (i ? " " : "") + Print(values[i]);
      continue;
    }
    if (values.size() == 1 && values[0].is_array()) values = values[0].get<std::vector<json>>();
    for (const json& item : values) RETURN_IF_ERROR(Run(node.body, root, item, out));
  }
  return Status::Ok();
}

}  // namespace

Result<JsonPath> JsonPath::Parse(const std::string& text) {
  std::vector<std::vector<Node>> stack(1);
  std::vector<Node> ranges;  // the open ranges, innermost last
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    if (open != i) {
      std::string literal = text.substr(i, open == std::string::npos ? open : open - i);
      stack.back().push_back({Node::kText, literal, {}, {}});
      if (open == std::string::npos) break;
    }
    // The action ends at the first '}' outside a string literal.
    size_t close = open + 1;
    bool quoted = false;
    for (; close < text.size(); ++close) {
      if (quoted && text[close] == '\\') {
        ++close;
      } else if (text[close] == '"') {
        quoted = !quoted;
      } else if (!quoted && text[close] == '}') {
        break;
      }
    }
    if (close >= text.size()) {
      return InvalidArgument("jsonpath: the '{' at position " + std::to_string(open) +
                             " is not closed");
    }
    std::string action = text.substr(open + 1, close - open - 1);
    while (!action.empty() && isspace(static_cast<unsigned char>(action.back()))) action.pop_back();
    while (!action.empty() && isspace(static_cast<unsigned char>(action.front()))) {
      action.erase(0, 1);
    }
    i = close + 1;
    if (action == "end") {
      if (ranges.empty()) return InvalidArgument("jsonpath: {end} without a {range}");
      Node range = std::move(ranges.back());
      ranges.pop_back();
      range.body = std::move(stack.back());
      stack.pop_back();
      stack.back().push_back(std::move(range));
    } else if (action.rfind("range ", 0) == 0) {
      ASSIGN_OR_RETURN(Path path, ParsePath(action.substr(6)));
      ranges.push_back({Node::kRange, "", std::move(path), {}});
      stack.emplace_back();
    } else if (!action.empty() && action[0] == '"') {
      ASSIGN_OR_RETURN(std::string literal, ParseLiteral(action));
      stack.back().push_back({Node::kText, literal, {}, {}});
    } else {
      ASSIGN_OR_RETURN(Path path, ParsePath(action));
      stack.back().push_back({Node::kPath, "", std::move(path), {}});
    }
  }
  if (!ranges.empty()) return InvalidArgument("jsonpath: a {range} without its {end}");
  JsonPath out;
  out.nodes_ = std::make_shared<const std::vector<Node>>(std::move(stack.back()));
  return out;
}

Result<std::string> JsonPath::Execute(const json& root) const {
  std::string out;
  RETURN_IF_ERROR(Run(*nodes_, root, root, out));
  return out;
}

}  // namespace tessera::inspect
