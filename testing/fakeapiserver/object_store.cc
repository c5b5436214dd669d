#include "fakeapiserver/object_store.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

#include "common/strings.h"

namespace tessera::testing {

using nlohmann::json;

namespace {

std::string RandomString(size_t n, std::string_view alphabet) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(alphabet[pick(rng)]);
  return s;
}

std::string NewUid() {
  const std::string_view hex = "0123456789abcdef";
  return RandomString(8, hex) + "-" + RandomString(4, hex) + "-4" + RandomString(3, hex) + "-" +
         RandomString(1, "89ab") + RandomString(3, hex) + "-" + RandomString(12, hex);
}

std::string NowRfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string StringAt(const json& object, const char* a, const char* b) {
  if (!object.contains(a) || !object[a].is_object() || !object[a].contains(b)) return "";
  const json& v = object[a][b];
  return v.is_string() ? v.get<std::string>() : "";
}

std::string Name(const json& o) {
  return StringAt(o, "metadata", "name");
}
std::string Namespace(const json& o) {
  return StringAt(o, "metadata", "namespace");
}

// Continue tokens travel in query strings: base64url without padding.
std::string ToUrlSafe(std::string b64) {
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  for (char& c : b64) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return b64;
}

std::string FromUrlSafe(std::string token) {
  for (char& c : token) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (token.size() % 4 != 0) token.push_back('=');
  return token;
}

const ResourceType& NamespaceType() {
  return *FindResourceType("", "v1", "namespaces");
}

}  // namespace

std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

ObjectStore::ObjectStore(size_t history) : history_limit_(std::max<size_t>(history, 1)) {
  for (const char* ns : {"default", "kube-system"}) {
    json object = {{"metadata", {{"name", ns}}},
                   {"spec", {{"finalizers", {"kubernetes"}}}},
                   {"status", {{"phase", "Active"}}}};
    ApiResult<ObjectPtr> created = Create(NamespaceType(), "", std::move(object));
    assert(created.ok());
  }
}

uint64_t ObjectStore::NextRvLocked() {
  return ++rv_;
}

void ObjectStore::RecordLocked(WatchEvent event) {
  history_.push_back(std::move(event));
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  changed_.notify_all();
}

ApiResult<ObjectPtr> ObjectStore::Create(const ResourceType& type, const std::string& ns,
                                         json object) {
  std::lock_guard lock(mu_);
  json& meta = object["metadata"];
  if (Name(object).empty() && meta.contains("generateName") && meta["generateName"].is_string()) {
    meta["name"] =
        meta["generateName"].get<std::string>() + RandomString(5, "bcdfghjklmnpqrstvwxz2456789");
  }
  const std::string name = Name(object);
  if (type.namespaced) {
    if (!objects_[&NamespaceType()].contains(ns)) return NotFoundError("namespaces", ns);
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  Objects& objects = objects_[&type];
  const std::string key = ObjectKey(type.namespaced ? ns : "", name);
  if (objects.contains(key)) return AlreadyExistsError(type.plural, name);

  object["kind"] = type.kind;
  object["apiVersion"] = type.ApiVersion();
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = NowRfc3339();
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  uint64_t rv = NextRvLocked();
  meta["resourceVersion"] = std::to_string(rv);
  auto stored = std::make_shared<const json>(std::move(object));
  objects[key] = stored;
  RecordLocked({.rv = rv, .type = "ADDED", .resource = &type, .object = stored});
  return ObjectPtr(stored);
}

ApiResult<ObjectPtr> ObjectStore::Get(const ResourceType& type, const std::string& ns,
                                      const std::string& name) {
  std::lock_guard lock(mu_);
  Objects& objects = objects_[&type];
  auto it = objects.find(ObjectKey(type.namespaced ? ns : "", name));
  if (it == objects.end()) return NotFoundError(type.plural, name);
  return it->second;
}

ApiResult<ListPage> ObjectStore::List(const ResourceType& type, const std::string& ns,
                                      const std::function<bool(const json&)>& filter, int64_t limit,
                                      const std::string& continue_token) {
  std::lock_guard lock(mu_);
  ListPage page;
  page.rv = rv_;
  std::string start_after;
  if (!continue_token.empty()) {
    std::optional<std::string> decoded = Base64Decode(FromUrlSafe(continue_token));
    json token = decoded ? json::parse(*decoded, nullptr, false) : json();
    if (!token.is_object() || !token["rv"].is_number_unsigned() || !token["start"].is_string()) {
      return BadRequest("continue key is not valid: \"" + continue_token + "\"");
    }
    page.rv = token["rv"].get<uint64_t>();
    start_after = token["start"].get<std::string>();
    if (page.rv < compacted_rv_) {
      return ExpiredError(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter.");
    }
  }
  const Objects& objects = objects_[&type];
  auto it = start_after.empty() ? objects.begin() : objects.upper_bound(start_after);
  std::string last_key;
  for (; it != objects.end(); ++it) {
    const json& o = *it->second;
    if (!ns.empty() && Namespace(o) != ns) continue;
    if (filter && !filter(o)) continue;
    if (limit > 0 && static_cast<int64_t>(page.items.size()) == limit) {
      ++page.remaining;
      continue;
    }
    page.items.push_back(it->second);
    last_key = it->first;
  }
  if (page.remaining > 0) {
    json token = {{"rv", page.rv}, {"start", last_key}};
    page.continue_token = ToUrlSafe(Base64Encode(token.dump()));
  }
  return page;
}

ApiResult<ObjectPtr> ObjectStore::Update(const ResourceType& type, const std::string& ns,
                                         const std::string& name, const Mutation& mutate) {
  std::lock_guard lock(mu_);
  Objects& objects = objects_[&type];
  const std::string key = ObjectKey(type.namespaced ? ns : "", name);
  auto it = objects.find(key);
  if (it == objects.end()) return NotFoundError(type.plural, name);
  const json& current = *it->second;
  ApiResult<json> mutated = mutate(current);
  if (!mutated.ok()) return mutated.error();
  json next = std::move(mutated.value());
  if (!next.is_object()) return BadRequest("the updated object is not a JSON object");
  json& meta = next["metadata"];
  if (!meta.is_object()) return BadRequest("metadata must be an object");
  const json& current_meta = current["metadata"];
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_null() &&
      meta["resourceVersion"] != current_meta["resourceVersion"]) {
    return ConflictError(type.plural, name,
                         "the object has been modified; please apply your changes to the latest "
                         "version and try again");
  }
  for (const char* field :
       {"name", "namespace", "uid", "creationTimestamp", "resourceVersion", "generation"}) {
    if (current_meta.contains(field)) {
      meta[field] = current_meta[field];
    } else {
      meta.erase(field);
    }
  }
  next["kind"] = type.kind;
  next["apiVersion"] = type.ApiVersion();
  if (next == current) return it->second;
  if (next.value("spec", json()) != current.value("spec", json())) {
    meta["generation"] = current_meta.value("generation", 0) + 1;
  }
  uint64_t rv = NextRvLocked();
  meta["resourceVersion"] = std::to_string(rv);
  ObjectPtr previous = it->second;
  auto stored = std::make_shared<const json>(std::move(next));
  it->second = stored;
  RecordLocked({.rv = rv,
                .type = "MODIFIED",
                .resource = &type,
                .object = stored,
                .previous = std::move(previous)});
  return ObjectPtr(stored);
}

ApiResult<ObjectPtr> ObjectStore::DeleteLocked(const ResourceType& type, const std::string& key) {
  Objects& objects = objects_[&type];
  auto it = objects.find(key);
  json object = *it->second;
  objects.erase(it);
  uint64_t rv = NextRvLocked();
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  auto deleted = std::make_shared<const json>(std::move(object));
  RecordLocked({.rv = rv, .type = "DELETED", .resource = &type, .object = deleted});
  return ObjectPtr(deleted);
}

ApiResult<ObjectPtr> ObjectStore::Delete(const ResourceType& type, const std::string& ns,
                                         const std::string& name, const std::string& uid,
                                         const std::string& resource_version) {
  std::lock_guard lock(mu_);
  Objects& objects = objects_[&type];
  const std::string key = ObjectKey(type.namespaced ? ns : "", name);
  auto it = objects.find(key);
  if (it == objects.end()) return NotFoundError(type.plural, name);
  const json& meta = (*it->second)["metadata"];
  if (!uid.empty() && meta.value("uid", "") != uid) {
    return ConflictError(type.plural, name,
                         "Precondition failed: UID in precondition: " + uid +
                             ", UID in object meta: " + meta.value("uid", ""));
  }
  if (!resource_version.empty() && meta.value("resourceVersion", "") != resource_version) {
    return ConflictError(
        type.plural, name,
        "Precondition failed: ResourceVersion in precondition: " + resource_version +
            ", ResourceVersion in object meta: " + meta.value("resourceVersion", ""));
  }
  if (&type == &NamespaceType()) {
    for (auto& [other_type, other_objects] : objects_) {
      if (!other_type->namespaced) continue;
      std::vector<std::string> doomed;
      for (const auto& [k, o] : other_objects) {
        if (Namespace(*o) == name) doomed.push_back(k);
      }
      for (const std::string& k : doomed) (void)DeleteLocked(*other_type, k);
    }
  }
  return DeleteLocked(type, key);
}

uint64_t ObjectStore::CurrentRv() {
  std::lock_guard lock(mu_);
  return rv_;
}

std::optional<ApiError> ObjectStore::CheckWatchable(uint64_t rv) {
  std::lock_guard lock(mu_);
  if (rv >= compacted_rv_) return std::nullopt;
  return ExpiredError("too old resource version: " + std::to_string(rv) + " (" +
                      std::to_string(compacted_rv_ + 1) + ")");
}

uint64_t ObjectStore::WatchGeneration() {
  std::lock_guard lock(mu_);
  return watch_generation_;
}

WatchBatch ObjectStore::WaitForEvents(const ResourceType& type, uint64_t after_rv,
                                      uint64_t generation,
                                      std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  WatchBatch batch;
  while (true) {
    batch.current_rv = rv_;
    if (stopped_) {
      batch.outcome = WatchBatch::Outcome::kStopped;
      return batch;
    }
    if (generation != watch_generation_) {
      batch.outcome = WatchBatch::Outcome::kClosed;
      return batch;
    }
    if (after_rv < compacted_rv_) {
      batch.outcome = WatchBatch::Outcome::kExpired;
      return batch;
    }
    auto first = std::upper_bound(history_.begin(), history_.end(), after_rv,
                                  [](uint64_t rv, const WatchEvent& e) { return rv < e.rv; });
    for (auto it = first; it != history_.end(); ++it) {
      if (it->resource == &type) batch.events.push_back(*it);
    }
    if (!batch.events.empty()) {
      batch.outcome = WatchBatch::Outcome::kEvents;
      return batch;
    }
    // Nothing of this type up to rv_: the caller may move its position there.
    after_rv = rv_;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      // Changes in the last instant are picked up by the next call, from the old position.
      batch.current_rv = after_rv;
      batch.outcome = WatchBatch::Outcome::kTimeout;
      return batch;
    }
  }
}

void ObjectStore::CloseWatches() {
  std::lock_guard lock(mu_);
  ++watch_generation_;
  changed_.notify_all();
}

void ObjectStore::ExpireHistory() {
  std::lock_guard lock(mu_);
  compacted_rv_ = rv_;
  history_.clear();
  changed_.notify_all();
}

void ObjectStore::Stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

}  // namespace tessera::testing
