#include "scheduler/resizer.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <tuple>

#include "common/json_text.h"
#include "log/log.h"
#include "scheduler/dialect.h"
#include "scheduler/quota.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

std::string MetaText(const json& object, const char* key) {
  const json* metadata = Member(object, "metadata");
  return metadata ? TextOf(*metadata, key) : "";
}

std::string AnnotationText(const json& pod, const char* key) {
  const json* metadata = Member(pod, "metadata");
  const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
  return annotations ? TextOf(*annotations, key) : "";
}

std::string UtcText(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Seconds since `text` (RFC 3339 UTC, as UtcText writes it); nullopt when it does not read.
std::optional<int64_t> AgeOf(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return std::nullopt;
  return static_cast<int64_t>(std::time(nullptr) - timegm(&tm));
}

// FNV-1a of `text` in 16 hex digits.
std::string HashText(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// The id a malformed request is answered under: one answer per value.
std::string MalformedId(const std::string& request_text) {
  return "invalid-" + HashText(request_text);
}

PodId IdOf(const json& pod) {
  PodId id{MetaText(pod, "namespace"), MetaText(pod, "name"), MetaText(pod, "uid")};
  if (id.ns.empty()) id.ns = "default";
  return id;
}

bool Finished(const json& pod) {
  const json* status = Member(pod, "status");
  const std::string phase = status ? TextOf(*status, "phase") : "";
  return phase == "Succeeded" || phase == "Failed";
}

// The size of `container` per GPU in `decision` (its first device: all of them are alike after a
// resize, and before one they were asked alike).
std::pair<uint64_t, int> SizeOf(const Allocation& decision, const std::string& container) {
  const ContainerAllocation* c = decision.Find(container);
  if (!c || c->devices.empty()) return {0, 0};
  return {c->devices.front().memory_mib, c->devices.front().cores};
}

// Whether `pod` is an older copy than `than` by resourceVersion. Kubernetes calls the versions
// opaque; they are etcd's revisions, numbers, and only numbers are compared (else: not older).
bool Older(const json& pod, const json& than) {
  const std::string a = MetaText(pod, "resourceVersion"), b = MetaText(than, "resourceVersion");
  auto number = [](const std::string& v) -> std::optional<uint64_t> {
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoull(v);
  };
  const std::optional<uint64_t> x = number(a), y = number(b);
  return x && y && *x < *y;
}

}  // namespace

Resizer::Resizer(ClusterState& state, QuotaLedger* quotas, ResizeWriter& writer,
                 const Leadership* leadership)
    : state_(state), quotas_(quotas), writer_(writer), leadership_(leadership) {}

Resizer::~Resizer() {
  Stop();
}

void Resizer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker_.joinable()) return;
  stopping_ = false;
  worker_ = std::thread([this] { Run(); });
}

void Resizer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::string Resizer::EventName(const std::string& name, const std::string& id) {
  // The id is the requester's text; the name must be a DNS subdomain of at most 253 characters,
  // so a long pod name is cut, never to end a label with '-' or '.'.
  constexpr size_t kMaxName = 253;
  const std::string suffix = ".tessera-resize-" + HashText(id);
  std::string head = name.substr(0, kMaxName - suffix.size());
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) head.pop_back();
  return head + suffix;
}

Resizer::Work Resizer::Needs(const json& pod, std::optional<ResizeRequest>& request,
                             std::optional<ResizeStatus>& status, std::string& malformed) const {
  const std::string request_text = AnnotationText(pod, annotations::kResize);
  if (request_text.empty() || Finished(pod)) return Work::kNone;
  if (Result<ResizeStatus> s = ParseResizeStatus(AnnotationText(pod, annotations::kResizeStatus));
      s.ok()) {
    status = *s;
  }
  Result<ResizeRequest> r = ParseResizeRequest(request_text);
  if (r.ok()) {
    request = *r;
  } else {
    malformed = r.status().message();
  }
  // A malformed request (only a pod the webhook does not see can carry one) is answered once per
  // value.
  const std::string id = request ? request->id : MalformedId(request_text);
  if (!status || status->id != id) return Work::kAnswer;
  std::optional<int64_t> age = AgeOf(status->time);
  return age && *age < kEventWindowSeconds ? Work::kEvent : Work::kNone;
}

void Resizer::OnPod(EventType type, const json& pod) {
  const std::string key = IdOf(pod).Key();
  std::lock_guard<std::mutex> lock(mu_);
  if (type == EventType::kDeleted) {
    queued_.erase(key);
    evented_.erase(key);
    return;
  }
  if (leadership_ && !leadership_->Leading()) return;
  std::optional<ResizeRequest> request;
  std::optional<ResizeStatus> status;
  std::string malformed;
  Work work = Needs(pod, request, status, malformed);
  if (work == Work::kNone) return;
  if (work == Work::kEvent) {
    auto done = evented_.find(key);
    if (done != evented_.end() && done->second == status->id) return;
  }
  auto queued = queued_.find(key);
  if (queued != queued_.end() && Older(pod, queued->second)) return;
  queued_[key] = pod;
  cv_.notify_all();
}

void Resizer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queued_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
      continue;
    }
    json pod = std::move(queued_.begin()->second);
    queued_.erase(queued_.begin());
    lock.unlock();
    Status s = !leadership_ || leadership_->Leading() ? Process(pod) : Status::Ok();
    // A lost race is decided again from the pod as it is now: its next event may never come
    // (the LIST that started leading can be older than an event already seen).
    for (int i = 0; i < kConflictRereads && s.code() == StatusCode::kConflict; ++i) {
      Result<json> now = writer_.GetPod(IdOf(pod));
      if (!now.ok()) break;  // the Conflict stands: the pod's next event answers
      pod = std::move(*now);
      s = !leadership_ || leadership_->Leading() ? Process(pod) : Status::Ok();
    }
    lock.lock();
    if (!s.ok()) {
      // A Conflict is answered from the pod's newer event; other errors are tried again in a
      // second, unless a newer event of the pod came meanwhile.
      log::Warn("resize not answered yet; trying again",
                {{"pod", IdOf(pod).Key()}, {"error", s.message()}});
      if (s.code() != StatusCode::kConflict) {
        queued_.emplace(IdOf(pod).Key(), std::move(pod));
        cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
      }
    }
  }
}

Status Resizer::Process(const json& pod) {
  std::optional<ResizeRequest> request;
  std::optional<ResizeStatus> status;
  std::string malformed;
  const PodId id = IdOf(pod);
  switch (Needs(pod, request, status, malformed)) {
    case Work::kNone:
      return Status::Ok();
    case Work::kEvent: {
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto done = evented_.find(id.Key());
        if (done != evented_.end() && done->second == status->id) return Status::Ok();
      }
      RecordAnswer(pod, *status);
      return Status::Ok();
    }
    case Work::kAnswer:
      return Answer(pod, id, AnnotationText(pod, annotations::kResize), request, malformed);
  }
  return Status::Ok();
}

Status Resizer::Answer(const json& pod, const PodId& id, const std::string& request_text,
                       const std::optional<ResizeRequest>& request, const std::string& malformed) {
  ResizeStatus answer;
  answer.id = request ? request->id : MalformedId(request_text);
  answer.container = request ? request->container : "";
  answer.time = UtcText(std::time(nullptr));
  std::optional<Allocation> previous, granted;
  std::string refusal = malformed;
  if (request) {
    Result<Allocation> replaced = state_.Resize(
        id, [&](const Allocation& current, std::span<const GpuSlot> gpus) -> Result<Allocation> {
          ASSIGN_OR_RETURN(Allocation next, ResizeDecision(current, *request, gpus));
          if (quotas_) {
            Result<PodRequest> asked = ParsePod(pod, state_.dialects());
            if (!asked.ok()) {
              return FailedPrecondition(
                  "the pod's GPU request cannot be counted against the "
                  "namespace's quotas: " +
                  asked.status().message());
            }
            const auto [from_mib, from_cores] = SizeOf(current, request->container);
            const auto [to_mib, to_cores] = SizeOf(next, request->container);
            std::string refused = quotas_->AdmitResize(
                id.ns, MetaText(pod, "uid"), AskOfPod(*asked, &next),
                "container \"" + request->container + "\" of pod " + id.Key() + " from " +
                    SizeText(from_mib, from_cores) + " to " + SizeText(to_mib, to_cores));
            if (!refused.empty()) return FailedPrecondition(refused);
          }
          granted = next;
          return next;
        });
    if (replaced.ok()) {
      previous = *replaced;
    } else {
      granted.reset();
      refusal = replaced.status().message();
    }
  }
  std::map<std::string, std::string> patch;
  if (previous && granted) {
    const auto [from_mib, from_cores] = SizeOf(*previous, request->container);
    const auto [to_mib, to_cores] = SizeOf(*granted, request->container);
    answer.granted = true;
    answer.memory_mib = to_mib;
    answer.cores = to_cores;
    answer.message = "container \"" + request->container + "\" resized from " +
                     SizeText(from_mib, from_cores) + " to " + SizeText(to_mib, to_cores) +
                     " on node " + granted->node;
    for (auto& [name, value] :
         state_.signing().Signed(annotations::kAllocation, id.uid, AllocationToJson(*granted))) {
      patch[name] = std::move(value);
    }
  } else {
    answer.message = refusal;
    if (request) {
      const std::string decision = AnnotationText(pod, annotations::kAllocation);
      if (Result<Allocation> held = ParseAllocation(decision); held.ok()) {
        std::tie(answer.memory_mib, answer.cores) = SizeOf(*held, request->container);
      }
    }
  }
  patch[annotations::kResizeStatus] = ResizeStatusToJson(answer);
  // Leadership may have ended while this was decided: the replica that leads now answers.
  // The answer is not written: the charge and the growth go back.
  auto undo = [&] {
    if (!previous) return;
    state_.CancelResize(id, *previous);
    if (quotas_) quotas_->ForgetResize(id.ns, MetaText(pod, "uid"));
  };
  // Leadership may have ended while this was decided: the replica that leads now answers.
  if (leadership_ && !leadership_->Leading()) {
    undo();
    return Status::Ok();
  }
  Result<json> patched = writer_.PatchPod(id, patch, MetaText(pod, "resourceVersion"));
  if (!patched.ok()) {
    undo();
    return patched.status();
  }
  // The state holds the new charge since Resize, and the ledger the growth since AdmitResize,
  // until the watch shows the patch: the patched pod is not applied here, since a newer event
  // (a deletion) may have come already and must not be undone.
  log::Info(answer.granted ? "resize granted" : "resize refused",
            {{"pod", id.Key()}, {"request", answer.id}, {"message", answer.message}});
  RecordAnswer(*patched, answer);
  return Status::Ok();
}

void Resizer::RecordAnswer(const json& pod, const ResizeStatus& status) {
  const PodId id = IdOf(pod);
  Status made =
      writer_.RecordEvent(pod, EventName(id.name, status.id), status.granted ? "Normal" : "Warning",
                          status.granted ? kResizedReason : kResizeRefusedReason,
                          "Tessera: resize " + status.id + ": " + status.message);
  if (!made.ok()) {
    log::Warn("cannot record the Event of a resize",
              {{"pod", id.Key()}, {"request", status.id}, {"error", made.message()}});
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  evented_[id.Key()] = status.id;
}

}  // namespace tessera::scheduler
