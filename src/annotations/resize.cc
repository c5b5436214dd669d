#include "annotations/resize.h"

#include <nlohmann/json.hpp>

#include "annotations/json_fields.h"
#include "annotations/names.h"

namespace tessera::annotations {

using internal::Field;
using internal::ParseVersionedObject;
using json = nlohmann::json;

std::string ResizeRequestToJson(const ResizeRequest& r) {
  json doc = {{"version", 1}, {"id", r.id}, {"container", r.container}};
  if (r.memory_mib) doc["memoryMiB"] = *r.memory_mib;
  if (r.cores) doc["cores"] = *r.cores;
  return doc.dump();
}

Result<ResizeRequest> ParseResizeRequest(std::string_view text) {
  ASSIGN_OR_RETURN(json doc, ParseVersionedObject(text, kResize));
  const std::string where = kResize;
  ResizeRequest r;
  uint64_t memory = 0;
  int cores = 0;
  RETURN_IF_ERROR(Field(doc, "id", where, r.id, true));
  RETURN_IF_ERROR(Field(doc, "container", where, r.container, true));
  // A negative number is not unsigned: say what is allowed rather than "the wrong type". (The
  // test is on the type: json's `< 0` takes an unsigned number above 2^63 for a negative one.)
  if (auto m = doc.find("memoryMiB"); m != doc.end() && m->is_number_integer() &&
                                      !m->is_number_unsigned() && m->get<int64_t>() < 0) {
    return InvalidArgument(where + ": \"memoryMiB\" " + m->dump() +
                           " is not allowed: give the memory per GPU in MiB, at least 1");
  }
  RETURN_IF_ERROR(Field(doc, "memoryMiB", where, memory, false));
  RETURN_IF_ERROR(Field(doc, "cores", where, cores, false));
  if (r.id.empty() || r.id.size() > kMaxResizeIdLength) {
    return InvalidArgument(where + ": \"id\" must be 1 to " + std::to_string(kMaxResizeIdLength) +
                           " characters (a new id for every request)");
  }
  if (r.container.empty()) return InvalidArgument(where + ": \"container\" is empty");
  if (doc.contains("memoryMiB") && !doc["memoryMiB"].is_null()) {
    if (memory == 0) {
      return InvalidArgument(where +
                             ": \"memoryMiB\" 0 is not allowed: give the memory per GPU in MiB, "
                             "at least 1");
    }
    if (memory > kMaxResizeMemoryMiB) {
      return InvalidArgument(where + ": \"memoryMiB\" " + std::to_string(memory) +
                             " is not allowed: give the memory per GPU in MiB, 1 to " +
                             std::to_string(kMaxResizeMemoryMiB));
    }
    r.memory_mib = memory;
  }
  if (doc.contains("cores") && !doc["cores"].is_null()) {
    if (cores < 1 || cores > 100) {
      return InvalidArgument(where + ": \"cores\" " + std::to_string(cores) +
                             " is not allowed: compute percent per GPU, 1 to 100");
    }
    r.cores = cores;
  }
  if (!r.memory_mib && !r.cores) {
    return InvalidArgument(where + ": asks for nothing: give \"memoryMiB\", \"cores\" or both");
  }
  return r;
}

std::string ResizeStatusToJson(const ResizeStatus& s) {
  return json{{"version", 1},
              {"id", s.id},
              {"container", s.container},
              {"granted", s.granted},
              {"memoryMiB", s.memory_mib},
              {"cores", s.cores},
              {"message", s.message},
              {"time", s.time}}
      .dump();
}

Result<ResizeStatus> ParseResizeStatus(std::string_view text) {
  ASSIGN_OR_RETURN(json doc, ParseVersionedObject(text, kResizeStatus));
  const std::string where = kResizeStatus;
  ResizeStatus s;
  RETURN_IF_ERROR(Field(doc, "id", where, s.id, true));
  RETURN_IF_ERROR(Field(doc, "container", where, s.container, false));
  RETURN_IF_ERROR(Field(doc, "granted", where, s.granted, true));
  RETURN_IF_ERROR(Field(doc, "memoryMiB", where, s.memory_mib, false));
  RETURN_IF_ERROR(Field(doc, "cores", where, s.cores, false));
  RETURN_IF_ERROR(Field(doc, "message", where, s.message, false));
  RETURN_IF_ERROR(Field(doc, "time", where, s.time, false));
  return s;
}

}  // namespace tessera::annotations
