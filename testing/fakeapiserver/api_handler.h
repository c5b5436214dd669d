// ApiHandler: serves the Kubernetes REST API (discovery, CRUD, patch, binding, watch) of the fake
// API server from an ObjectStore, translating HTTP requests into store operations and store
// results into the real server's JSON answers.
//
// Thread-safe: Handle may run on many server threads at once; the store does the locking and the
// settings are atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "fakeapiserver/admission_webhook.h"
#include "fakeapiserver/object_store.h"
#include "fakeapiserver/request_path.h"

namespace tessera::testing {

class ApiHandler {
 public:
  // `webhook` (may be null) admits every pod created, before it is stored.
  ApiHandler(ObjectStore& store, std::chrono::milliseconds bookmark_interval,
             std::unique_ptr<AdmissionWebhook> webhook = nullptr);

  // Answers one API request (anything but the /fake control endpoints).
  void Handle(const httplib::Request& req, httplib::Response& res);

  // When set, a watch from a too-old resourceVersion gets HTTP 200 and an ERROR event with a 410
  // Status instead of an HTTP 410 answer (the real server does either, depending on its cache).
  void SetTooOldAsEvent(bool as_event) { too_old_as_event_ = as_event; }

 private:
  void Discovery(const RequestPath& path, httplib::Response& res);
  void OpenApi(const httplib::Request& req, httplib::Response& res);
  void List(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void Watch(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void GetObject(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void Create(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void Replace(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void Patch(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  // A pod update through the admission webhook (when there is one); `next` when allowed.
  ApiResult<nlohmann::json> AdmitUpdate(const RequestPath& path, const httplib::Request& req,
                                        const nlohmann::json& current, nlohmann::json next) const;
  void Delete(const RequestPath& path, const httplib::Request& req, httplib::Response& res);
  void Bind(const RequestPath& path, const httplib::Request& req, httplib::Response& res);

  ObjectStore& store_;
  const std::chrono::milliseconds bookmark_interval_;
  std::atomic<bool> too_old_as_event_{false};
  const std::unique_ptr<AdmissionWebhook> webhook_;
};

// Writes `error` as a Status answer.
void SendError(httplib::Response& res, const ApiError& error);
// Writes a JSON answer with `code`.
void SendJson(httplib::Response& res, int code, const nlohmann::json& body);

}  // namespace tessera::testing
