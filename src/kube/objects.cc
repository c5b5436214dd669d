#include "kube/objects.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace tessera::kube {

std::string StringAt(const Json& object, const char* pointer) {
  Json::json_pointer ptr(pointer);
  if (!object.is_object() || !object.contains(ptr)) return "";
  const Json& value = object.at(ptr);
  return value.is_string() ? value.get<std::string>() : "";
}

std::string NameOf(const Json& object) {
  return StringAt(object, "/metadata/name");
}
std::string NamespaceOf(const Json& object) {
  return StringAt(object, "/metadata/namespace");
}
std::string UidOf(const Json& object) {
  return StringAt(object, "/metadata/uid");
}
std::string ResourceVersionOf(const Json& object) {
  return StringAt(object, "/metadata/resourceVersion");
}
std::string NodeNameOf(const Json& pod) {
  return StringAt(pod, "/spec/nodeName");
}
std::string PhaseOf(const Json& pod) {
  return StringAt(pod, "/status/phase");
}

std::string ObjectKey(const Json& object) {
  std::string ns = NamespaceOf(object);
  return ns.empty() ? NameOf(object) : ns + "/" + NameOf(object);
}

namespace {
std::map<std::string, std::string> StringMap(const Json& object, const char* pointer) {
  std::map<std::string, std::string> out;
  Json::json_pointer ptr(pointer);
  if (!object.is_object() || !object.contains(ptr) || !object.at(ptr).is_object()) return out;
  for (const auto& [key, value] : object.at(ptr).items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}
}  // namespace

std::string Annotation(const Json& object, std::string_view key) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return "";
  auto value = annotations->find(std::string(key));
  return value != annotations->end() && value->is_string() ? value->get<std::string>() : "";
}

std::map<std::string, std::string> Annotations(const Json& object) {
  return StringMap(object, "/metadata/annotations");
}
std::map<std::string, std::string> Labels(const Json& object) {
  return StringMap(object, "/metadata/labels");
}

Json MetadataMapPatch(const char* field, const StringMapChanges& changes,
                      const std::string& resource_version) {
  Json map = Json::object();
  for (const auto& [key, value] : changes) map[key] = value ? Json(*value) : Json(nullptr);
  Json patch = {{"metadata", {{field, map}}}};
  if (!resource_version.empty()) patch["metadata"]["resourceVersion"] = resource_version;
  return patch;
}

std::string Rfc3339Now(bool microseconds) {
  auto now = std::chrono::system_clock::now();
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  int n = std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", utc.tm_year + 1900,
                        utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  if (microseconds) {
    std::snprintf(text + n, sizeof text - n, ".%06lldZ",
                  static_cast<long long>(micros % 1'000'000));
  } else {
    std::snprintf(text + n, sizeof text - n, "Z");
  }
  return text;
}

}  // namespace tessera::kube
