// JSONPath templates as `kubectl -o jsonpath=...` takes them, the subset inspect supports:
// text outside braces printed as is; in braces a path from the current object (`.a.b`,
// `$.a` from the root, `.` itself), with `[n]` (negative from the end), `[*]` or `.*` for every
// element, `\.` for a dot inside a name; a string literal (`{"\n"}`); and `{range PATH}...{end}`,
// which runs its body with each element as the current object. Several results of one path are
// printed separated by spaces; strings as they are, other values as JSON. A missing field prints
// nothing (kubectl's default --allow-missing-template-keys). Refused with a message: recursive
// descent (`..`), filters (`[?()]`), slices (`[a:b]`), unions (`[a,b]`) and functions.
// Immutable after Parse: thread-safe.
//
//   ASSIGN_OR_RETURN(JsonPath path, JsonPath::Parse("{range .nodes[*]}{.name}{\"\\n\"}{end}"));
//   ASSIGN_OR_RETURN(std::string text, path.Execute(view.ToJson()));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::inspect {

class JsonPath {
 public:
  // InvalidArgument naming the position and what is not supported.
  static Result<JsonPath> Parse(const std::string& text);

  // InvalidArgument for an index out of range or a range over something not iterable.
  Result<std::string> Execute(const nlohmann::json& root) const;

  struct Node;  // a piece of the template (jsonpath.cc)

 private:
  std::shared_ptr<const std::vector<Node>> nodes_;
};

}  // namespace tessera::inspect
