#include "fakeapiserver/patch.h"

#include "common/strings.h"

namespace tessera::testing {

using nlohmann::json;

ApiResult<json> ApplyPatch(const std::string& content_type, const std::string& patch_body,
                           const json& target, const std::string& kind, const std::string& name) {
  std::string media(Trim(content_type.substr(0, content_type.find(';'))));
  bool merge =
      media == "application/merge-patch+json" || media == "application/strategic-merge-patch+json";
  bool json_patch = media == "application/json-patch+json";
  if (!merge && !json_patch) return UnsupportedMediaTypeError(content_type);
  json patch = json::parse(patch_body, nullptr, /*allow_exceptions=*/false);
  if (patch.is_discarded()) {
    return BadRequest("error decoding patch: invalid JSON in the request body");
  }
  if (merge) {
    if (!patch.is_object())
      return BadRequest("error decoding patch: a merge patch must be an object");
    json result = target;
    result.merge_patch(patch);
    return result;
  }
  if (!patch.is_array()) {
    return BadRequest("error decoding patch: a JSON patch must be an array of operations");
  }
  try {
    return target.patch(patch);
  } catch (const json::exception& e) {
    return ApiError{
        422,
        "Invalid",
        kind + " \"" + name + "\" is invalid: the JSON patch could not be applied: " + e.what(),
        {{"name", name}, {"kind", kind}}};
  }
}

}  // namespace tessera::testing
