// AccessReviews: the fake API server's TokenReview (authentication.k8s.io/v1) and
// SubjectAccessReview (authorization.k8s.io/v1), answered from the tokens and grants a test sets,
// as the real server answers them (201, the review echoed with its status).
//
//   server->access_reviews().AddToken("t-alice", {.name = "alice", .groups = {"team-a"}});
//   server->access_reviews().Allow("group:team-a", "get", "tessera.io", "scheduler/inspect");
//
// A token not added is not authenticated; a request is allowed only when a grant names its user
// (or one of its groups, "group:<name>"), its verb and its group and resource (with the
// subresource as "resource/subresource"). Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <httplib.h>

namespace tessera::testing {

class AccessReviews {
 public:
  struct User {
    std::string name;
    std::string uid;
    std::vector<std::string> groups;
  };
  void AddToken(const std::string& token, User user);
  // Lets `subject` (a user name, or "group:<name>") do `verb` on `resource` ("plural" or
  // "plural/subresource") of API group `group` ("" for the core group).
  void Allow(const std::string& subject, const std::string& verb, const std::string& group,
             const std::string& resource);

  // Answers POST /apis/authentication.k8s.io/v1/tokenreviews and
  // /apis/authorization.k8s.io/v1/subjectaccessreviews; false (nothing written) for any other
  // request.
  bool Handle(const httplib::Request& req, httplib::Response& res);
  // Reviews answered so far (both kinds).
  size_t answered() const { return answered_.load(); }

 private:
  void TokenReview(const httplib::Request& req, httplib::Response& res);
  void SubjectAccessReview(const httplib::Request& req, httplib::Response& res);

  std::mutex mu_;
  std::map<std::string, User> tokens_;  // guarded by mu_
  // (subject, verb, group, resource); guarded by mu_
  std::set<std::tuple<std::string, std::string, std::string, std::string>> grants_;
  std::atomic<size_t> answered_{0};
};

}  // namespace tessera::testing
