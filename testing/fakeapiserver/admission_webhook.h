// AdmissionWebhook: the fake API server's call to an admission webhook on pod creation, as the
// real server does with a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration
// (both rules: pods, CREATE; failurePolicy Fail): POST an AdmissionReview admission.k8s.io/v1 to
// <base>/mutate and apply the JSONPatch it answers, then POST the patched pod to <base>/validate.
// A pod UPDATE (PUT or PATCH, not the status subresource) goes to <base>/validate only, with the
// stored pod as oldObject, as deploy/'s guard.tessera.io sends it. userInfo.username is the
// request's Impersonate-User header, or "fake-apiserver" without one.
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
  ApiResult<nlohmann::json> Admit(const nlohmann::json& pod, const std::string& ns,
                                  const std::string& user = "") const;
  // OK when the update of `old_pod` to `pod` by `user` may be stored; otherwise the error.
  ApiResult<nlohmann::json> AdmitUpdate(const nlohmann::json& old_pod, const nlohmann::json& pod,
                                        const std::string& ns, const std::string& user) const;

 private:
  ApiResult<nlohmann::json> Review(const std::string& verb, const std::string& operation,
                                   const nlohmann::json& pod, const nlohmann::json& old_pod,
                                   const std::string& ns, const std::string& user) const;
  // The pod, or the real server's error when the webhook `verb` denied it.
  ApiResult<nlohmann::json> Allowed(const std::string& verb, ApiResult<nlohmann::json> response,
                                    const nlohmann::json& pod) const;

  const std::string base_url_;
  const std::string domain_;
};

}  // namespace tessera::testing
