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

ApiResult<json> AdmissionWebhook::Review(const std::string& verb, const json& pod,
                                         const std::string& ns) const {
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
                   {"operation", "CREATE"},
                   {"userInfo", {{"username", "fake-apiserver"}}},
                   {"object", pod},
                   {"oldObject", nullptr},
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

ApiResult<json> AdmissionWebhook::Admit(const json& pod, const std::string& ns) const {
  json current = pod;
  for (const char* verb : {"mutate", "validate"}) {
    ApiResult<json> response = Review(verb, current, ns);
    if (!response.ok()) return response.error();
    if (!response->value("allowed", false)) {
      json status = response->value("status", json::object());
      int code = status.value("code", 400);
      std::string message = status.value("message", "");
      return ErrorForCode(code < 400 ? 400 : code,
                          "admission webhook \"" + std::string(verb) + "." + domain_ +
                              "\" denied the request" +
                              (message.empty() ? " without explanation" : ": " + message));
    }
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

}  // namespace tessera::testing
