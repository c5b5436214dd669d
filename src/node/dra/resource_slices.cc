#include "node/dra/resource_slices.h"

#include <algorithm>

#include "kube/objects.h"
#include "log/log.h"

namespace tessera::node {

using nlohmann::json;

namespace {
const json::json_pointer kPoolGeneration("/spec/pool/generation");
}  // namespace

ResourceSlicePublisher::ResourceSlicePublisher(kube::Client& client,
                                               ResourceSlicePublisherOptions options)
    : options_(std::move(options)),
      owner_{options_.node_name, options_.node_uid},
      name_(ResourceSliceName(options_.node_name)),
      client_(client) {}

ResourceSlicePublisher::~ResourceSlicePublisher() {
  Stop();
}

Status ResourceSlicePublisher::Start() {
  if (owner_.node_name.empty() || owner_.node_uid.empty()) {
    return InvalidArgument(
        "the ResourceSlice publisher needs the node's name and metadata.uid (its owner); got "
        "name '" +
        owner_.node_name + "', uid '" + owner_.node_uid + "'");
  }
  if (thread_.joinable() || cancel_.cancelled()) {
    return FailedPrecondition("the ResourceSlice publisher starts only once");
  }
  thread_ = std::thread([this] { Run(); });
  watcher_ = std::thread([this] { Watch(); });
  return Status::Ok();
}

void ResourceSlicePublisher::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
  if (watcher_.joinable()) watcher_.join();
}

void ResourceSlicePublisher::Update(const std::vector<GpuInfo>& gpus) {
  json devices = SliceDevices(gpus, options_.unhealthy_taint);
  {
    std::lock_guard lock(mu_);
    if (devices_ == devices) return;
    devices_ = std::move(devices);
    dirty_ = true;
  }
  changed_.notify_all();
}

void ResourceSlicePublisher::Run() {
  kube::Backoff backoff(options_.backoff);
  std::unique_lock lock(mu_);
  // Nothing is published before the first Update: an empty slice would tell the scheduler the
  // node has no GPU.
  changed_.wait(lock, [&] { return stop_ || devices_.has_value(); });
  while (!stop_) {
    json devices = *devices_;
    dirty_ = false;
    lock.unlock();
    Status s = Reconcile(devices);
    lock.lock();
    std::chrono::milliseconds wait = options_.resync;
    if (s.ok()) {
      backoff.Reset();
    } else if (!stop_) {
      wait = std::min(wait, backoff.Next());
      log::Warn("could not publish the node's ResourceSlice; retrying",
                {{"slice", name_},
                 {"error", s.message()},
                 {"retry-in-ms", std::to_string(wait.count())}});
    }
    changed_.wait_for(lock, wait, [&] { return stop_ || dirty_; });
  }
}

std::string ResourceSlicePublisher::FieldSelector() const {
  return "spec.nodeName=" + owner_.node_name + ",spec.driver=" + std::string(kDraDriverName);
}

void ResourceSlicePublisher::Watch() {
  kube::Backoff backoff(options_.backoff);
  while (!cancel_.cancelled()) {
    auto started = std::chrono::steady_clock::now();
    Status s = client_.Watch(
        kube::kResourceSlices, {.field_selector = FieldSelector()},
        [&](const kube::WatchEvent& event) {
          if (event.type == kube::WatchEvent::Type::kDeleted &&
              kube::NameOf(event.object) == name_) {
            log::Info(
                "the node's ResourceSlice was deleted (kubelet deletes them at its start): "
                "publishing it again",
                {{"slice", name_}});
            {
              std::lock_guard lock(mu_);
              dirty_ = true;
            }
            changed_.notify_all();
          }
          return true;
        },
        &cancel_);
    if (cancel_.cancelled()) return;
    // A watch the server ended after a while is resumed at once; one that failed, after a wait.
    std::chrono::milliseconds wait{0};
    if (!s.ok() || std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
      wait = backoff.Next();
      if (!s.ok()) {
        log::Warn("cannot watch the node's ResourceSlices; the resync still repairs the slice",
                  {{"error", s.message()}, {"retry-in-ms", std::to_string(wait.count())}});
      }
    } else {
      backoff.Reset();
    }
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, wait, [&] { return stop_; });
  }
}

Status ResourceSlicePublisher::Reconcile(const json& devices) {
  const kube::CallOptions call{.cancel = &cancel_};
  Result<kube::ObjectList> listed =
      client_.List(kube::kResourceSlices, {.field_selector = FieldSelector()}, call);
  if (!listed.ok()) return listed.status().WithContext("listing the node's ResourceSlices");
  std::optional<json> ours;
  int64_t generation = 0;  // the highest pool generation on the server
  for (const json& slice : listed->items) {
    generation = std::max(generation, slice.value(kPoolGeneration, int64_t{0}));
    if (kube::NameOf(slice) == name_) {
      ours = slice;
      continue;
    }
    // A slice of this driver and node under another name is left from an earlier agent (or
    // another naming): its devices would be counted twice.
    Status s = client_.Delete(kube::kResourceSlices, "", kube::NameOf(slice), call);
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      return s.WithContext("deleting the stale ResourceSlice " + kube::NameOf(slice));
    }
    log::Info("deleted a stale ResourceSlice of this node", {{"slice", kube::NameOf(slice)}});
  }
  json desired = ResourceSliceObject(owner_, devices, generation + 1);
  if (!ours) {
    Result<json> created = client_.Create(kube::kResourceSlices, "", desired, call);
    if (!created.ok()) return created.status().WithContext("creating the ResourceSlice " + name_);
    log::Info("created the node's ResourceSlice", {{"slice", name_},
                                                   {"devices", std::to_string(devices.size())},
                                                   {"generation", std::to_string(generation + 1)}});
    return Status::Ok();
  }
  if (SliceMatches(*ours, desired)) return Status::Ok();
  desired["metadata"]["resourceVersion"] = kube::ResourceVersionOf(*ours);
  Result<json> updated = client_.Update(kube::kResourceSlices, desired, call);
  // A conflict (someone wrote the slice since the list) is retried like any error: the next
  // attempt reads it again.
  if (!updated.ok()) return updated.status().WithContext("updating the ResourceSlice " + name_);
  log::Info("updated the node's ResourceSlice", {{"slice", name_},
                                                 {"devices", std::to_string(devices.size())},
                                                 {"generation", std::to_string(generation + 1)}});
  return Status::Ok();
}

}  // namespace tessera::node
