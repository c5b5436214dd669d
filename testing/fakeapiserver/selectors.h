// Field and label selectors, parsed from the query-string syntax of the Kubernetes API.
//
//   ASSIGN_OR... auto labels = LabelSelector::Parse("app in (a,b),tier!=db,!canary");
//   labels->Matches(pod)                          // reads metadata.labels
//   auto fields = FieldSelector::Parse("spec.nodeName=n1,status.phase!=Failed", allowed);
//   fields->Matches(pod)
//
// Label selectors support `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists) and
// `!k` (does not exist); field selectors support `f=v`, `f==v`, `f!=v` on a fixed set of fields.
// Requirements separated by commas must all hold. An empty selector matches everything.
// Immutable after parsing: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"

namespace tessera::testing {

class LabelSelector {
 public:
  // A 400 BadRequest ApiError says what part of `text` could not be parsed.
  static ApiResult<LabelSelector> Parse(std::string_view text);

  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  // `allowed` lists the field paths this resource supports; metadata.name and metadata.namespace
  // are always allowed. An unknown field is a 400 BadRequest, as on the real server.
  static ApiResult<FieldSelector> Parse(std::string_view text,
                                        const std::vector<std::string>& allowed);

  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

  // The value a field selector compares for `path` ("spec.nodeName"): strings as they are,
  // booleans and numbers as text, missing fields as "".
  static std::string FieldValue(const nlohmann::json& object, std::string_view path);

 private:
  struct Requirement {
    std::string field;
    bool equals;
    std::string value;
  };
  std::vector<Requirement> requirements_;
};

}  // namespace tessera::testing
