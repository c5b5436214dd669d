#include "kube/informer.h"

#include "kube/api_error.h"
#include "log/log.h"

namespace tessera::kube {

Informer::Informer(Client& client, const Resource& resource, InformerOptions options,
                   InformerHandlers handlers)
    : Informer(std::make_unique<ClientListerWatcher>(client, resource, options.selectors), options,
               std::move(handlers)) {}

Informer::Informer(std::unique_ptr<ListerWatcher> source, InformerOptions options,
                   InformerHandlers handlers)
    : source_(std::move(source)), options_(std::move(options)), handlers_(std::move(handlers)) {}

Informer::~Informer() {
  Stop();
}

void Informer::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true);
  }
  cancel_.Cancel();
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::HasSynced() const {
  std::lock_guard lock(mutex_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return synced_ || stopping_.load(); });
  return synced_;
}

std::optional<Json> Informer::Get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> Informer::List() const {
  std::lock_guard lock(mutex_);
  std::vector<Json> out;
  out.reserve(cache_.size());
  for (const auto& [key, object] : cache_) out.push_back(object);
  return out;
}

std::string Informer::LastResourceVersion() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

int Informer::ListCount() const {
  std::lock_guard lock(mutex_);
  return list_count_;
}

bool Informer::Pause(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !changed_.wait_for(lock, delay, [&] { return stopping_.load(); });
}

void Informer::Deliver(const Change& change) {
  switch (change.kind) {
    case Change::Kind::kAdd:
      if (handlers_.on_add) handlers_.on_add(change.new_object);
      break;
    case Change::Kind::kUpdate:
      if (handlers_.on_update) handlers_.on_update(change.old_object, change.new_object);
      break;
    case Change::Kind::kDelete:
      if (handlers_.on_delete) handlers_.on_delete(change.old_object);
      break;
  }
}

Status Informer::Relist() {
  ASSIGN_OR_RETURN(ObjectList list, source_->List(&cancel_));
  std::vector<Change> changes;
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Json> fresh;
    for (Json& item : list.items) {
      std::string key = ObjectKey(item);
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        changes.push_back({Change::Kind::kAdd, Json(), item});
      } else if (ResourceVersionOf(old->second) != ResourceVersionOf(item)) {
        changes.push_back({Change::Kind::kUpdate, old->second, item});
      }
      fresh.emplace(std::move(key), std::move(item));
    }
    for (auto& [key, object] : cache_) {
      if (!fresh.contains(key)) changes.push_back({Change::Kind::kDelete, object, Json()});
    }
    cache_ = std::move(fresh);
    resource_version_ = list.resource_version;
    ++list_count_;
  }
  for (const Change& change : changes) Deliver(change);
  {
    std::lock_guard lock(mutex_);
    synced_ = true;
  }
  changed_.notify_all();
  return Status::Ok();
}

void Informer::Upsert(const Json& object) {
  Change change;
  {
    std::lock_guard lock(mutex_);
    std::string key = ObjectKey(object);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      change = {Change::Kind::kAdd, Json(), object};
      cache_.emplace(key, object);
    } else if (ResourceVersionOf(it->second) == ResourceVersionOf(object)) {
      return;  // the same version again (a resumed watch repeating itself): nothing changed
    } else {
      change = {Change::Kind::kUpdate, it->second, object};
      it->second = object;
    }
    resource_version_ = ResourceVersionOf(object);
  }
  Deliver(change);
}

void Informer::Remove(const Json& object) {
  Change change{Change::Kind::kDelete, object, Json()};
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(ObjectKey(object));
    if (it != cache_.end()) cache_.erase(it);
    resource_version_ = ResourceVersionOf(object);
  }
  Deliver(change);
}

Status Informer::WatchOnce(bool& got_events) {
  return source_->Watch(
      LastResourceVersion(),
      [&](const WatchEvent& event) {
        got_events = true;
        switch (event.type) {
          case WatchEvent::Type::kAdded:
          case WatchEvent::Type::kModified:
            Upsert(event.object);
            break;
          case WatchEvent::Type::kDeleted:
            Remove(event.object);
            break;
          case WatchEvent::Type::kBookmark: {
            std::lock_guard lock(mutex_);
            resource_version_ = ResourceVersionOf(event.object);
            break;
          }
          case WatchEvent::Type::kError:
            break;  // Client::Watch ends the stream with its Status
        }
        return !stopping_.load();
      },
      &cancel_);
}

void Informer::Run() {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  const std::string& what = options_.name;
  while (!stopping_.load()) {
    if (need_list) {
      Status listed = Relist();
      if (stopping_.load()) break;
      if (!listed.ok()) {
        log::Warn("informer list failed", {{"informer", what}, {"error", listed.message()}});
        if (!Pause(backoff.Next())) break;
        continue;
      }
      need_list = false;
      backoff.Reset();
    }
    bool got_events = false;
    auto started = std::chrono::steady_clock::now();
    Status watched = WatchOnce(got_events);
    if (stopping_.load()) break;
    if (IsGone(watched)) {
      log::Info("informer resourceVersion expired, listing again",
                {{"informer", what}, {"error", watched.message()}});
      need_list = true;
      continue;
    }
    if (!watched.ok()) {
      log::Warn("informer watch failed", {{"informer", what}, {"error", watched.message()}});
      if (!Pause(backoff.Next())) break;
      continue;
    }
    // A clean end: resume at once if the watch did useful work, else back off so that a server
    // that closes every watch at once is not hammered.
    bool useful =
        got_events || std::chrono::steady_clock::now() - started > std::chrono::seconds(1);
    if (useful) {
      backoff.Reset();
    } else if (!Pause(backoff.Next())) {
      break;
    }
  }
  changed_.notify_all();
}

}  // namespace tessera::kube
