#include "node/allocation/allocation_recorder.h"

#include <algorithm>

#include "log/log.h"
#include "node/allocation/grant.h"

namespace tessera::node {

using nlohmann::json;

namespace {

constexpr auto kFirstRetry = std::chrono::milliseconds(500);
constexpr auto kLastRetry = std::chrono::seconds(30);

AnnotationPatch Patch(const std::vector<std::pair<std::string, std::string>>& values) {
  AnnotationPatch patch;
  for (const auto& [name, value] : values) patch[name] = value;
  return patch;
}

}  // namespace

AllocationRecorder::AllocationRecorder(PodSource& pods, ApiWriter& writer,
                                       annotations::Signing signing)
    : pods_(pods), writer_(writer), signing_(std::move(signing)), worker_([this] { Run(); }) {}

annotations::Allocated AllocationRecorder::CachedAllocated(const PodRef& pod,
                                                           const std::string& what) const {
  if (!pod || PodAnnotation(*pod, kAllocatedAnnotation).empty()) return {};
  if (Status s = signing_.Check(*pod, kAllocatedAnnotation, what); !s.ok()) {
    if (!what.empty()) {
      signing_.Refused(kAllocatedAnnotation, s.message(),
                       "rewritten with only what this agent recorded");
    }
    return {};
  }
  Result<annotations::Allocated> value =
      annotations::ParseAllocated(PodAnnotation(*pod, kAllocatedAnnotation));
  if (!value.ok() && !what.empty()) {
    log::Warn("rewriting a malformed tessera.io/allocated with what this agent recorded",
              {{"pod", what}, {"error", value.status().message()}});
  }
  return value.ok() ? *value : annotations::Allocated{};
}

AllocationRecorder::~AllocationRecorder() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (!queue_.empty()) {
      log::Warn("pod annotations not written at shutdown",
                {{"writes", std::to_string(queue_.size())}});
    }
  }
  cv_.notify_all();
  worker_.join();
}

void AllocationRecorder::Allocated(const ContainerRef& owner, const std::string& allocation_id,
                                   const std::vector<std::string>& uuids) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({.owner = owner, .allocation_id = allocation_id, .uuids = uuids});
  }
  cv_.notify_all();
}

void AllocationRecorder::Failed(const ContainerRef& owner, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({.owner = owner, .failed = true, .reason = reason});
  }
  cv_.notify_all();
}

bool AllocationRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

void AllocationRecorder::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    auto ready = std::find_if(queue_.begin(), queue_.end(),
                              [&](const Write& w) { return w.not_before <= now; });
    if (ready == queue_.end()) {
      auto next = std::min_element(
          queue_.begin(), queue_.end(),
          [](const Write& a, const Write& b) { return a.not_before < b.not_before; });
      cv_.wait_until(lock, next->not_before);
      continue;
    }
    Write w = std::move(*ready);
    queue_.erase(ready);
    busy_ = true;
    lock.unlock();
    bool done = Make(w);
    lock.lock();
    busy_ = false;
    if (!done) {
      ++w.attempts;
      auto delay = std::min<std::chrono::milliseconds>(kFirstRetry * (1 << std::min(w.attempts, 6)),
                                                       kLastRetry);
      w.not_before = std::chrono::steady_clock::now() + delay;
      queue_.push_back(std::move(w));
    }
    cv_.notify_all();
  }
}

bool AllocationRecorder::Make(const Write& w) {
  // A pod that is gone, or was replaced by one of the same name, needs no record.
  PodRef pod = pods_.FindPod(w.owner.ns, w.owner.pod);
  if (pod && !w.owner.uid.empty() && PodUid(*pod) != w.owner.uid) return true;
  Status s = w.failed
                 ? writer_.PatchPodAnnotations(
                       w.owner.ns, w.owner.pod,
                       Patch(signing_.Signed(kAllocationFailedAnnotation, w.owner.uid, w.reason)))
                 : WriteAllocated(w);
  if (s.ok()) return true;
  if (s.code() == StatusCode::kNotFound) return true;
  log::Warn(w.failed ? "could not mark the pod tessera.io/allocation-failed, trying again"
                     : "could not record tessera.io/allocated, trying again",
            {{"pod", w.owner.ToString()},
             {"attempt", std::to_string(w.attempts + 1)},
             {"error", s.message()}});
  return false;
}

Status AllocationRecorder::WriteAllocated(const Write& w) {
  // Forget what the cache now shows, or what belongs to a pod that is gone.
  for (auto it = recorded_.begin(); it != recorded_.end();) {
    PodRef pod = pods_.FindPod(it->second.ns, it->second.pod);
    bool current = pod && PodUid(*pod) == it->first && CachedAllocated(pod, "") != it->second.value;
    it = current ? std::next(it) : recorded_.erase(it);
  }
  PodRef pod = pods_.FindPod(w.owner.ns, w.owner.pod);
  annotations::Allocated value = CachedAllocated(pod, "pod " + w.owner.ns + "/" + w.owner.pod);
  if (auto it = recorded_.find(w.owner.uid); it != recorded_.end()) {
    for (const auto& [container, record] : it->second.value) value[container] = record;
  }
  annotations::AllocatedContainer entry{w.allocation_id, w.uuids};
  if (auto it = value.find(w.owner.container); it != value.end() && it->second == entry) {
    return Status::Ok();
  }
  value[w.owner.container] = entry;
  RETURN_IF_ERROR(
      writer_.PatchPodAnnotations(w.owner.ns, w.owner.pod,
                                  Patch(signing_.Signed(kAllocatedAnnotation, w.owner.uid,
                                                        annotations::AllocatedToJson(value)))));
  recorded_[w.owner.uid] = Recorded{w.owner.ns, w.owner.pod, std::move(value)};
  return Status::Ok();
}

}  // namespace tessera::node
