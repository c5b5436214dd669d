#include "fakeapiserver/admission_webhook.h"

#include <httplib.h>

#include <atomic>

#include "common/strings.h"
#include "fakeapiserver/patch.h"

namespace tessera::testing {

using nlohmann::json;

namespace {

std::string NewUid() {
  static std::atomic<unsigned long> counter{0};
  return "admission-" + std::to_string(++counter);
}

}  // namespace

AdmissionWebhook::AdmissionWebhook(std::string base_url, std::string domain)
    : base_url_(std::move(base_url)), domain_(std::move(domain)) {}

ApiResult<json> AdmissionWebhook::Review(const std::string& verb, const std::string& operation,
                                         const json& pod, const json& old_pod,
                                         const std::string& ns, const std::string& user) const {
  std::string uid = NewUid();
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", uid},
                   {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                   {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                   {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                   {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                   {"name", pod["metadata"].value("name", "")},
                   {"namespace", ns},
                   {"operation", operation},
                   {"userInfo", {{"username", user.empty() ? "fake-apiserver" : user}}},
                   {"object", pod},
                   {"oldObject", old_pod},
                   {"dryRun", false}}}};
  std::string failed = "failed calling webhook \"" + verb + "." + domain_ + "\": ";
  // Split "http://host:port/prefix" into the client's base and the path prefix.
  size_t scheme = base_url_.find("://");
  size_t slash = base_url_.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  std::string origin = slash == std::string::npos ? base_url_ : base_url_.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : base_url_.substr(slash);
  httplib::Client client(origin);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(10, 0);
  auto res = client.Post(prefix + "/" + verb, review.dump(), "application/json");
  if (!res) return ErrorForCode(500, failed + httplib::to_string(res.error()));
  if (res->status != 200) {
    return ErrorForCode(500, failed + "HTTP " + std::to_string(res->status) + ": " + res->body);
  }
  json answer = json::parse(res->body, nullptr, false);
  if (answer.is_discarded() || !answer.contains("response") ||
      answer["response"].value("uid", "") != uid) {
    return ErrorForCode(500, failed + "the answer is not an AdmissionReview for this request");
  }
  return answer["response"];
}

ApiResult<json> AdmissionWebhook::Allowed(const std::string& verb, ApiResult<json> response,
                                          const json& pod) const {
  if (!response.ok()) return response.error();
  if (response->value("allowed", false)) return pod;
  json status = response->value("status", json::object());
  int code = status.value("code", 400);
  std::string message = status.value("message", "");
  return ErrorForCode(code < 400 ? 400 : code,
                      "admission webhook \"" + verb + "." + domain_ + "\" denied the request" +
                          (message.empty() ? " without explanation" : ": " + message));
}

ApiResult<json> AdmissionWebhook::Admit(const json& pod, const std::string& ns,
                                        const std::string& user) const {
  json current = pod;
  for (const char* verb : {"mutate", "validate"}) {
    ApiResult<json> response = Review(verb, "CREATE", current, nullptr, ns, user);
    ApiResult<json> allowed = Allowed(verb, response, current);
    if (!allowed.ok()) return allowed.error();
    if (std::string(verb) == "mutate" && response->contains("patch")) {
      std::optional<std::string> patch = Base64Decode((*response)["patch"].get<std::string>());
      if (!patch) {
        return ErrorForCode(
            500, "failed calling webhook \"mutate." + domain_ + "\": the patch is not base64");
      }
      ApiResult<json> patched = ApplyPatch("application/json-patch+json", *patch, current, "Pod",
                                           current["metadata"].value("name", ""));
      if (!patched.ok()) {
        return ErrorForCode(500, "failed calling webhook \"mutate." + domain_ +
                                     "\": its patch cannot be applied: " + patched.error().message);
      }
      current = std::move(*patched);
    }
  }
  return current;
}

ApiResult<json> AdmissionWebhook::AdmitUpdate(const json& old_pod, const json& pod,
                                              const std::string& ns,
                                              const std::string& user) const {
  return Allowed("validate", Review("validate", "UPDATE", pod, old_pod, ns, user), pod);
}

}  // namespace tessera::testing
