#include "scheduler/kube_read_access.h"

#include "log/log.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
// Each review gets this long; a page's read waits for it only once a `ttl`.
constexpr std::chrono::seconds kReviewTimeout{5};

std::string What(const ReadAction& action) {
  return std::string(action.verb) + " " + kAccessGroup + " " + kAccessResource + "/" +
         action.subresource;
}

}  // namespace

KubeReadAuthorizer::KubeReadAuthorizer(kube::Client& client, std::chrono::milliseconds ttl,
                                       Clock now, size_t max_entries, int max_reviews_per_second)
    : client_(client),
      ttl_(ttl),
      now_(std::move(now)),
      max_entries_(max_entries),
      max_reviews_per_second_(max_reviews_per_second) {}

AccessVerdict KubeReadAuthorizer::Check(const std::string& authorization,
                                        const ReadAction& action) {
  std::optional<std::string> token = BearerToken(authorization);
  if (!token) {
    return {401, "",
            std::string(authorization.empty() ? "no Authorization header"
                                              : "the Authorization header is not \"Bearer "
                                                "<token>\"") +
                ": this scheduler serves its state only to a Kubernetes token (scheduler.read-"
                "access=token) of a user allowed to " +
                What(action) + " (for example `kubectl create token NAME`)"};
  }
  const std::string key = std::string(action.subresource) + "\n" + *token;
  const auto now = now_();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.expires > now) return it->second.verdict;
    if (now - window_ >= std::chrono::seconds(1)) {
      window_ = now;
      reviews_in_window_ = 0;
    }
    if (reviews_in_window_ >= max_reviews_per_second_) {
      return {429, "",
              "too many tokens to review at once (at most " +
                  std::to_string(max_reviews_per_second_) + " a second): try again in a second"};
    }
    ++reviews_in_window_;
  }
  AccessVerdict verdict = Ask(*token, action);
  if (verdict.status == 503) return verdict;
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= max_entries_) {
    std::erase_if(cache_, [now](const auto& e) { return e.second.expires <= now; });
    if (cache_.size() >= max_entries_) cache_.clear();
  }
  cache_[key] = {verdict, now + ttl_};
  return verdict;
}

AccessVerdict KubeReadAuthorizer::Ask(const std::string& token, const ReadAction& action) {
  const kube::CallOptions call{.timeout = kReviewTimeout};
  const json review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", token}}}};
  Result<json> reviewed = client_.Request("POST", kTokenReviews, &review, "application/json", call);
  if (!reviewed.ok()) {
    log::Warn("cannot review a token for the scheduler's state",
              {{"error", reviewed.status().message()}});
    return {503, "",
            "cannot check the token: the TokenReview failed (the scheduler's service account "
            "needs create on tokenreviews): " +
                reviewed.status().message()};
  }
  const json status = reviewed->value("status", json::object());
  if (!status.is_object() || !status.value("authenticated", false)) {
    std::string why = status.is_object() ? status.value("error", "") : "";
    return {401, "",
            "the token is not valid for this cluster (TokenReview: " +
                (why.empty() ? std::string("not authenticated") : why) + ")"};
  }
  const json user = status.value("user", json::object());
  const std::string name = user.is_object() ? user.value("username", "") : "";
  json spec = {{"user", name},
               {"resourceAttributes",
                {{"group", kAccessGroup},
                 {"resource", kAccessResource},
                 {"subresource", action.subresource},
                 {"verb", action.verb}}}};
  for (const char* field : {"uid", "groups", "extra"}) {
    if (user.is_object() && user.contains(field)) spec[field] = user[field];
  }
  const json access = {
      {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
  Result<json> decided = client_.Request("POST", kAccessReviews, &access, "application/json", call);
  if (!decided.ok()) {
    log::Warn("cannot authorise a user for the scheduler's state",
              {{"user", name}, {"error", decided.status().message()}});
    return {503, name,
            "cannot check the user's access: the SubjectAccessReview failed (the scheduler's "
            "service account needs create on subjectaccessreviews): " +
                decided.status().message()};
  }
  const json result = decided->value("status", json::object());
  if (result.is_object() && result.value("allowed", false)) return {200, name, ""};
  std::string reason = result.is_object() ? result.value("reason", "") : "";
  return {403, name,
          "user \"" + name + "\" may not " + What(action) +
              (reason.empty() ? std::string() : " (" + reason + ")") +
              ": bind it to the ClusterRole tessera-gpu-viewer (docs/ui.md)"};
}

}  // namespace tessera::scheduler
