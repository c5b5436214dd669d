// AdmissionWebhook: the fake API server's call to an admission webhook on pod creation, as the
// real server does with a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration
// (both rules: pods, CREATE; failurePolicy Fail): POST an AdmissionReview admission.k8s.io/v1 to
// <base>/mutate and apply the JSONPatch it answers, then POST the patched pod to <base>/validate.
//
// A denial becomes the real server's error: the webhook's status code (at least 400, 400 when
// none) and the message `admission webhook "<name>" denied the request: <message>`. A webhook
// that cannot be reached or answers something else is a 500 InternalError
// `failed calling webhook "<name>": ...`, as with failurePolicy Fail.
//
// Thread-safe: Admit may run on many server threads at once (one HTTP client per call).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"

namespace tessera::testing {

class AdmissionWebhook {
 public:
  // `base_url` is "http://host:port" (a path prefix is kept). The two webhooks are named
  // "mutate.<domain>" and "validate.<domain>" in messages, as deploy/webhook/webhooks.yaml names
  // them and as the real server's messages name the webhook that answered.
  AdmissionWebhook(std::string base_url, std::string domain);

  // Returns the pod to store (mutated), or the error to answer.
  ApiResult<nlohmann::json> Admit(const nlohmann::json& pod, const std::string& ns) const;

 private:
  ApiResult<nlohmann::json> Review(const std::string& verb, const nlohmann::json& pod,
                                   const std::string& ns) const;

  const std::string base_url_;
  const std::string domain_;
};

}  // namespace tessera::testing
