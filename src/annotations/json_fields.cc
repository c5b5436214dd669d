#include "annotations/json_fields.h"

namespace tessera::annotations::internal {

Result<nlohmann::json> ParseVersionedObject(std::string_view text, const char* what) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument(std::string(what) + " is not valid JSON");
  if (!doc.is_object()) return InvalidArgument(std::string(what) + " is not a JSON object");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != 1) {
    return InvalidArgument(std::string(what) + ": \"version\" must be 1");
  }
  return doc;
}

}  // namespace tessera::annotations::internal
