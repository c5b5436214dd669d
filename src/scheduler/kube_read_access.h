// KubeReadAuthorizer: ReadAuthorizer (read_access.h) through the API server. A bearer token is
// authenticated with a TokenReview (authentication.k8s.io/v1); the user it names is then
// authorised with a SubjectAccessReview (authorization.k8s.io/v1) for the action's verb on
// tessera.io scheduler/<subresource>, with the user's groups, UID and extra as the review gave
// them. Both answers are cached per token and action for `ttl` (allowed and refused alike, so a
// client repeating a bad token costs the API server one review a `ttl`); a failed call is not
// cached and refuses with 503. The cache holds at most `max_entries`; expired entries go first,
// then all. Tokens it has not seen cost API calls on the scheduler's own client (whose rate
// limit binds share): at most `max_reviews_per_second` tokens are reviewed a second, more are
// refused with 429 until the next second. The scheduler's service account needs `create` on
// tokenreviews and subjectaccessreviews (deploy/scheduler/rbac.yaml). Thread-safe; the Client
// must outlive it.
//
//   KubeReadAuthorizer auth(client);
//   AccessVerdict v = auth.Check("Bearer eyJ...", kReadInspect);
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kube/client.h"
#include "scheduler/read_access.h"

namespace tessera::scheduler {

class KubeReadAuthorizer : public ReadAuthorizer {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit KubeReadAuthorizer(kube::Client& client,
                              std::chrono::milliseconds ttl = std::chrono::seconds(10),
                              Clock now = std::chrono::steady_clock::now, size_t max_entries = 4096,
                              int max_reviews_per_second = 20);

  AccessVerdict Check(const std::string& authorization, const ReadAction& action) override;

 private:
  // The reviews for one token and action, uncached.
  AccessVerdict Ask(const std::string& token, const ReadAction& action);

  struct Entry {
    AccessVerdict verdict;
    std::chrono::steady_clock::time_point expires;
  };
  kube::Client& client_;
  const std::chrono::milliseconds ttl_;
  const Clock now_;
  const size_t max_entries_;
  const int max_reviews_per_second_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_;  // by subresource and token; guarded by mu_
  std::chrono::steady_clock::time_point window_;  // the second counted; guarded by mu_
  int reviews_in_window_ = 0;                     // guarded by mu_
};

}  // namespace tessera::scheduler
