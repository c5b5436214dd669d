#include "scheduler/filter_memory.h"

#include <algorithm>
#include <memory>

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

std::string StringAt(const json& object, const char* pointer) {
  const json v = object.value(json::json_pointer(pointer), json());
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace

FilterMemory::FilterMemory(const ClusterState& state, size_t max_pods, Clock now)
    : state_(state), max_pods_(std::max<size_t>(max_pods, 1)), now_(std::move(now)) {}

void FilterMemory::Record(const PodId& pod, const FilterResult& result) {
  // Only pods of the API server, never a name a client made up.
  if (!state_.Pending(pod)) return;
  FilterRecord r{
      .uid = pod.uid,
      .time = now_(),
      .nodes_checked = result.fits.size() + result.failed.size() + result.unresolvable.size()};
  // The first kMaxListed by name, found without sorting or copying all of them: a filter over
  // thousands of nodes pays for the few it keeps.
  std::vector<const std::string*> fits;
  fits.reserve(result.fits.size());
  for (const std::string& n : result.fits) fits.push_back(&n);
  auto by_name = [](const std::string* a, const std::string* b) { return *a < *b; };
  const size_t kept_fits = std::min(fits.size(), kMaxListed);
  std::partial_sort(fits.begin(), fits.begin() + kept_fits, fits.end(), by_name);
  for (size_t i = 0; i < kept_fits; ++i) r.fits.push_back(*fits[i]);
  r.fits_left_out = fits.size() - kept_fits;

  using Refused = std::pair<const std::pair<std::string, std::string>*, bool>;
  std::vector<Refused> refused;
  refused.reserve(result.failed.size() + result.unresolvable.size());
  for (const auto& f : result.failed) refused.emplace_back(&f, false);
  for (const auto& f : result.unresolvable) refused.emplace_back(&f, true);
  const size_t kept = std::min(refused.size(), kMaxListed);
  std::partial_sort(
      refused.begin(), refused.begin() + kept, refused.end(),
      [](const Refused& a, const Refused& b) { return a.first->first < b.first->first; });
  for (size_t i = 0; i < kept; ++i) {
    r.reasons.push_back({refused[i].first->first, refused[i].first->second, refused[i].second});
  }
  r.reasons_left_out = refused.size() - kept;
  const std::string key = pod.Key();
  auto record = std::make_shared<const FilterRecord>(std::move(r));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!records_.count(key) && records_.size() >= max_pods_) {
      auto oldest = std::min_element(
          records_.begin(), records_.end(),
          [](const auto& a, const auto& b) { return a.second->time < b.second->time; });
      records_.erase(oldest);
    }
    records_[key] = record;
  }
  // The pod may have been bound or deleted since the check above, its watch event finding no
  // record to drop: ask again, and drop this record (not a newer one) when it no longer waits.
  if (state_.Pending(pod)) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  if (it != records_.end() && it->second == record) records_.erase(it);
}

void FilterMemory::OnPod(EventType type, const json& pod) {
  std::string ns = StringAt(pod, "/metadata/namespace");
  const std::string key = (ns.empty() ? "default" : ns) + "/" + StringAt(pod, "/metadata/name");
  const std::string phase = StringAt(pod, "/status/phase");
  const std::string uid = StringAt(pod, "/metadata/uid");
  const bool placed_or_gone = type == EventType::kDeleted || phase == "Succeeded" ||
                              phase == "Failed" || !StringAt(pod, "/spec/nodeName").empty();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return;
  const bool other_pod = !uid.empty() && !it->second->uid.empty() && uid != it->second->uid;
  if (placed_or_gone || other_pod) records_.erase(it);
}

std::map<std::string, FilterRecord> FilterMemory::All() const {
  std::map<std::string, std::shared_ptr<const FilterRecord>> kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kept = records_;  // pointers only: the filters are not held up by the copy of the records
  }
  std::map<std::string, FilterRecord> all;
  for (auto& [key, record] : kept) all.emplace(key, *record);
  return all;
}

size_t FilterMemory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

}  // namespace tessera::scheduler
