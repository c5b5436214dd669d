#include "node/allocation/pod_view.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "annotations/allocated.h"
#include "node/allocation/grant.h"

namespace tessera::node {

using nlohmann::json;

namespace {

int64_t QuantityValue(const json& q) {
  if (q.is_number_integer()) return q.get<int64_t>();
  if (!q.is_string()) return 0;
  const std::string& s = q.get_ref<const std::string&>();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return 0;
  return v;
}

const json& Member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// The string member `key` of `obj` (a view into it), or "" when absent or not a string.
std::string_view StringMember(const json& obj, const char* key) {
  const json& v = Member(obj, key);
  return v.is_string() ? std::string_view(v.get_ref<const std::string&>()) : std::string_view();
}

}  // namespace

int64_t ContainerRequest(const json& container, const std::string& resource) {
  const json& res = Member(container, "resources");
  for (const char* which : {"limits", "requests"}) {
    const json& m = Member(res, which);
    if (m.is_object() && m.contains(resource)) return QuantityValue(m[resource]);
  }
  return 0;
}

const json* FindContainer(const json& pod, const std::string& name) {
  const json& spec = Member(pod, "spec");
  for (const char* list : {"initContainers", "containers"}) {
    const json& cs = Member(spec, list);
    if (!cs.is_array()) continue;
    for (const json& c : cs) {
      if (c.is_object() && c.value("name", "") == name) return &c;
    }
  }
  return nullptr;
}

bool PodTerminal(const json& pod) {
  const json& phase = Member(Member(pod, "status"), "phase");
  return phase.is_string() && (phase == "Succeeded" || phase == "Failed");
}

bool PodFinished(const json& pod) {
  return PodTerminal(pod) || !Member(Member(pod, "metadata"), "deletionTimestamp").is_null();
}

std::string_view PodUid(const json& pod) {
  return StringMember(Member(pod, "metadata"), "uid");
}

std::string PodAnnotation(const json& pod, const std::string& key) {
  const json& v = Member(Member(Member(pod, "metadata"), "annotations"), key.c_str());
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::vector<ContainerRef> AllocateCandidates(
    const std::vector<PodRef>& pods, const std::string& resource, int64_t count,
    const std::function<bool(const ContainerRef&)>& taken) {
  struct PodCandidates {
    std::string_view created, ns, name;
    std::vector<ContainerRef> containers;
  };
  std::vector<PodCandidates> found;
  for (const PodRef& p : pods) {
    if (PodFinished(*p)) continue;
    const json& meta = Member(*p, "metadata");
    std::optional<annotations::Allocated> allocated;  // parsed when a container matches
    PodCandidates entry;
    for (const char* list : {"initContainers", "containers"}) {
      const json& cs = Member(Member(*p, "spec"), list);
      if (!cs.is_array()) continue;
      for (const json& c : cs) {
        if (ContainerRequest(c, resource) != count) continue;
        ContainerRef ref{meta.value("namespace", "default"), meta.value("name", ""),
                         meta.value("uid", ""), c.value("name", "")};
        if (taken(ref)) continue;
        if (!allocated) {
          // Malformed (or absent): no container of the pod has been set up, as far as it says.
          Result<annotations::Allocated> parsed =
              annotations::ParseAllocated(PodAnnotation(*p, kAllocatedAnnotation));
          allocated = parsed.ok() ? *parsed : annotations::Allocated{};
        }
        if (allocated->count(ref.container) > 0) continue;
        entry.containers.push_back(std::move(ref));
      }
    }
    if (entry.containers.empty()) continue;
    entry.created = StringMember(meta, "creationTimestamp");
    entry.ns = StringMember(meta, "namespace");
    entry.name = StringMember(meta, "name");
    found.push_back(std::move(entry));
  }
  std::stable_sort(found.begin(), found.end(), [](const PodCandidates& a, const PodCandidates& b) {
    return std::tie(a.created, a.ns, a.name) < std::tie(b.created, b.ns, b.name);
  });
  std::vector<ContainerRef> out;
  for (PodCandidates& entry : found) {
    for (ContainerRef& ref : entry.containers) out.push_back(std::move(ref));
  }
  return out;
}

}  // namespace tessera::node
