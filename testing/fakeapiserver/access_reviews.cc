#include "fakeapiserver/access_reviews.h"

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"
#include "fakeapiserver/api_handler.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

// The review's body when it is a JSON object of `kind` with a `spec` object; else the error.
ApiResult<json> ReviewBody(const httplib::Request& req, const char* kind) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    return BadRequest(std::string("the object provided is unrecognized (must be of type ") + kind +
                      ")");
  }
  if (body.value("kind", "") != kind) {
    return BadRequest(body.value("kind", "") + " cannot be handled as a " + kind);
  }
  if (!body.contains("spec") || !body["spec"].is_object()) {
    return InvalidError(kind, "", "spec", "FieldValueRequired", "Required value");
  }
  return body;
}

}  // namespace

void AccessReviews::AddToken(const std::string& token, User user) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_[token] = std::move(user);
}

void AccessReviews::Allow(const std::string& subject, const std::string& verb,
                          const std::string& group, const std::string& resource) {
  std::lock_guard<std::mutex> lock(mu_);
  grants_.emplace(subject, verb, group, resource);
}

bool AccessReviews::Handle(const httplib::Request& req, httplib::Response& res) {
  if (req.method != "POST") return false;
  if (req.path == kTokenReviews) {
    TokenReview(req, res);
  } else if (req.path == kAccessReviews) {
    SubjectAccessReview(req, res);
  } else {
    return false;
  }
  return true;
}

void AccessReviews::TokenReview(const httplib::Request& req, httplib::Response& res) {
  ApiResult<json> body = ReviewBody(req, "TokenReview");
  if (!body.ok()) return SendError(res, body.error());
  const json spec = (*body)["spec"];
  const std::string token = spec.value("token", "");
  json status = {{"authenticated", false}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tokens_.find(token);
    if (it != tokens_.end()) {
      status = {{"authenticated", true},
                {"user",
                 {{"username", it->second.name},
                  {"uid", it->second.uid},
                  {"groups", it->second.groups}}}};
    } else {
      status["error"] = "invalid bearer token";
    }
  }
  (*body)["status"] = status;
  ++answered_;
  SendJson(res, 201, *body);
}

void AccessReviews::SubjectAccessReview(const httplib::Request& req, httplib::Response& res) {
  ApiResult<json> body = ReviewBody(req, "SubjectAccessReview");
  if (!body.ok()) return SendError(res, body.error());
  const json spec = (*body)["spec"];
  const json attributes = spec.value("resourceAttributes", json::object());
  if (!attributes.is_object() || attributes.empty()) {
    return SendError(res, InvalidError("SubjectAccessReview", "", "spec.resourceAttributes",
                                       "FieldValueRequired",
                                       "resourceAttributes or nonResourceAttributes is required"));
  }
  std::vector<std::string> subjects = {spec.value("user", "")};
  for (const json& g : spec.value("groups", json::array())) {
    if (g.is_string()) subjects.push_back("group:" + g.get<std::string>());
  }
  std::string resource = attributes.value("resource", "");
  const std::string subresource = attributes.value("subresource", "");
  if (!subresource.empty()) resource += "/" + subresource;
  const std::string verb = attributes.value("verb", "");
  const std::string group = attributes.value("group", "");
  bool allowed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& subject : subjects) {
      allowed = allowed || grants_.count({subject, verb, group, resource}) > 0;
    }
  }
  (*body)["status"] = allowed ? json{{"allowed", true}, {"reason", "allowed by a test's grant"}}
                              : json{{"allowed", false}};
  ++answered_;
  SendJson(res, 201, *body);
}

}  // namespace tessera::testing
