#include "fakeapiserver/api_handler.h"

#include <charconv>
#include <memory>

#include "common/strings.h"
#include "fakeapiserver/discovery.h"
#include "fakeapiserver/object_validation.h"
#include "fakeapiserver/patch.h"
#include "fakeapiserver/table.h"
#include "fakeapiserver/watch_stream.h"

namespace tessera::testing {

using nlohmann::json;

void SendJson(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

void SendError(httplib::Response& res, const ApiError& error) {
  SendJson(res, error.code, error.ToStatusJson());
}

namespace {

std::string Str(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

bool Truthy(const std::string& v) {
  return v == "1" || v == "true";
}

ApiResult<uint64_t> ParseRv(const std::string& text) {
  uint64_t rv = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rv);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return BadRequest("invalid resource version \"" + text + "\": must be a decimal number");
  }
  return rv;
}

struct Selectors {
  FieldSelector fields;
  LabelSelector labels;
};

ApiResult<Selectors> ParseSelectors(const httplib::Request& req, const ResourceType& type) {
  ApiResult<FieldSelector> fields =
      FieldSelector::Parse(req.get_param_value("fieldSelector"), type.field_labels);
  if (!fields.ok()) return fields.error();
  ApiResult<LabelSelector> labels = LabelSelector::Parse(req.get_param_value("labelSelector"));
  if (!labels.ok()) return labels.error();
  return Selectors{std::move(*fields), std::move(*labels)};
}

std::string ListKind(const ResourceType& type) {
  return type.kind + "List";
}

}  // namespace

ApiHandler::ApiHandler(ObjectStore& store, std::chrono::milliseconds bookmark_interval,
                       std::unique_ptr<AdmissionWebhook> webhook)
    : store_(store), bookmark_interval_(bookmark_interval), webhook_(std::move(webhook)) {}

void ApiHandler::Handle(const httplib::Request& req, httplib::Response& res) {
  if (req.path.rfind("/openapi/v3", 0) == 0) return OpenApi(req, res);
  RequestPath path = RequestPath::Parse(req.path);
  using Target = RequestPath::Target;
  if (path.target == Target::kUnknown) {
    SendError(res,
              {404,
               "NotFound",
               "the server could not find the requested resource",
               {{"causes",
                 {{{"reason", "UnexpectedServerResponse"}, {"message", "404 page not found"}}}}}});
    return;
  }
  const std::string& m = req.method;
  if (path.target != Target::kCollection && path.target != Target::kObject) {
    if (m != "GET") return SendError(res, MethodNotAllowedError());
    return Discovery(path, res);
  }
  if (path.target == Target::kCollection) {
    if (m == "GET") {
      return Truthy(req.get_param_value("watch")) ? Watch(path, req, res) : List(path, req, res);
    }
    if (m == "POST" && (path.ns.empty() == !path.type->namespaced)) return Create(path, req, res);
    return SendError(res, MethodNotAllowedError());
  }
  if (path.subresource == "binding") {
    if (m == "POST") return Bind(path, req, res);
    return SendError(res, MethodNotAllowedError());
  }
  if (m == "GET") return GetObject(path, req, res);
  if (m == "PUT") return Replace(path, req, res);
  if (m == "PATCH") return Patch(path, req, res);
  if (m == "DELETE" && path.subresource.empty()) return Delete(path, req, res);
  SendError(res, MethodNotAllowedError());
}

void ApiHandler::Discovery(const RequestPath& path, httplib::Response& res) {
  json doc;
  switch (path.target) {
    case RequestPath::Target::kCoreVersions:
      doc = CoreApiVersions();
      break;
    case RequestPath::Target::kGroupList:
      doc = ApiGroupList();
      break;
    case RequestPath::Target::kGroup:
      doc = ApiGroup(path.group);
      break;
    default:
      doc = ApiResourceList(path.group, path.version);
      break;
  }
  if (doc.is_null()) {
    return SendError(res, {404, "NotFound", "the server could not find the requested resource"});
  }
  SendJson(res, 200, doc);
}

void ApiHandler::OpenApi(const httplib::Request& req, httplib::Response& res) {
  json doc;
  std::vector<std::string> s = Split(req.path, '/');  // openapi, v3, api|apis, ...
  if (s.size() == 2) {
    doc = OpenApiV3Root();
  } else if (s.size() == 4 && s[2] == "api") {
    doc = OpenApiV3Document("", s[3]);
  } else if (s.size() == 5 && s[2] == "apis") {
    doc = OpenApiV3Document(s[3], s[4]);
  }
  if (doc.is_null()) {
    return SendError(res, {404, "NotFound", "the server could not find the requested resource"});
  }
  SendJson(res, 200, doc);
}

void ApiHandler::List(const RequestPath& path, const httplib::Request& req,
                      httplib::Response& res) {
  ApiResult<Selectors> selectors = ParseSelectors(req, *path.type);
  if (!selectors.ok()) return SendError(res, selectors.error());
  int64_t limit = 0;
  if (req.has_param("limit")) {
    const std::string text = req.get_param_value("limit");
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (ec != std::errc() || end != text.data() + text.size() || limit < 0) {
      return SendError(res, BadRequest("invalid limit \"" + text + "\": must be a number >= 0"));
    }
  }
  auto filter = [&](const json& o) {
    return selectors->fields.Matches(o) && selectors->labels.Matches(o);
  };
  ApiResult<ListPage> page =
      store_.List(*path.type, path.ns, filter, limit, req.get_param_value("continue"));
  if (!page.ok()) return SendError(res, page.error());
  const std::string rv = std::to_string(page->rv);
  if (WantsTable(req.get_header_value("Accept"))) {
    json table = RenderTable(*path.type, page->items, rv, req.get_param_value("includeObject"));
    if (!page->continue_token.empty()) table["metadata"]["continue"] = page->continue_token;
    return SendJson(res, 200, table);
  }
  json items = json::array();
  for (const ObjectPtr& o : page->items) items.push_back(*o);
  json meta = {{"resourceVersion", rv}};
  if (!page->continue_token.empty()) {
    meta["continue"] = page->continue_token;
    meta["remainingItemCount"] = page->remaining;
  }
  SendJson(res, 200,
           {{"kind", ListKind(*path.type)},
            {"apiVersion", path.type->ApiVersion()},
            {"metadata", meta},
            {"items", items}});
}

void ApiHandler::Watch(const RequestPath& path, const httplib::Request& req,
                       httplib::Response& res) {
  ApiResult<Selectors> selectors = ParseSelectors(req, *path.type);
  if (!selectors.ok()) return SendError(res, selectors.error());
  WatchOptions options{.type = path.type,
                       .ns = path.ns,
                       .fields = selectors->fields,
                       .labels = selectors->labels,
                       .bookmarks = Truthy(req.get_param_value("allowWatchBookmarks")),
                       .bookmark_interval = bookmark_interval_,
                       .deadline = std::chrono::steady_clock::time_point::max(),
                       .as_table = WantsTable(req.get_header_value("Accept")),
                       .include_object = req.get_param_value("includeObject")};
  if (req.has_param("timeoutSeconds")) {
    ApiResult<uint64_t> seconds = ParseRv(req.get_param_value("timeoutSeconds"));
    if (!seconds.ok()) return SendError(res, BadRequest("invalid timeoutSeconds"));
    options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*seconds);
  }
  const std::string rv_text = req.get_param_value("resourceVersion");
  bool expired_as_event = false;
  if (rv_text.empty() || rv_text == "0") {
    // No position: the current state first, as ADDED events, then the changes after it.
    ApiResult<ListPage> page = store_.List(
        *path.type, path.ns,
        [&](const json& o) { return options.fields.Matches(o) && options.labels.Matches(o); }, 0,
        "");
    if (!page.ok()) return SendError(res, page.error());
    options.initial = std::move(page->items);
    options.after_rv = page->rv;
  } else {
    ApiResult<uint64_t> rv = ParseRv(rv_text);
    if (!rv.ok()) return SendError(res, rv.error());
    options.after_rv = *rv;
    if (std::optional<ApiError> gone = store_.CheckWatchable(*rv)) {
      if (!too_old_as_event_) return SendError(res, *gone);
      expired_as_event = true;
    }
  }
  auto stream = std::make_shared<WatchStream>(store_, std::move(options));
  res.status = 200;
  // The media-type parameter keeps httplib from compressing (and so buffering) the stream.
  res.set_chunked_content_provider(
      "application/json;stream=watch", [stream, expired_as_event](size_t, httplib::DataSink& sink) {
        bool done = expired_as_event;
        std::string lines;
        if (expired_as_event) {
          ApiError gone = ExpiredError("The resourceVersion for the provided watch is too old.");
          lines = json({{"type", "ERROR"}, {"object", gone.ToStatusJson()}}).dump() + "\n";
        } else {
          lines = stream->Next(&done);
        }
        if (!lines.empty() && !sink.write(lines.data(), lines.size())) return false;
        if (done) sink.done();
        return true;
      });
}

void ApiHandler::GetObject(const RequestPath& path, const httplib::Request& req,
                           httplib::Response& res) {
  ApiResult<ObjectPtr> object = store_.Get(*path.type, path.ns, path.name);
  if (!object.ok()) return SendError(res, object.error());
  if (WantsTable(req.get_header_value("Accept"))) {
    return SendJson(
        res, 200,
        RenderTable(*path.type, {*object}, (**object)["metadata"].value("resourceVersion", ""),
                    req.get_param_value("includeObject")));
  }
  SendJson(res, 200, **object);
}

void ApiHandler::Create(const RequestPath& path, const httplib::Request& req,
                        httplib::Response& res) {
  ApiResult<json> object = DecodeObject(req.body, *path.type, path);
  if (!object.ok()) return SendError(res, object.error());
  if (path.type->plural == "pods" && webhook_ != nullptr) {
    ApiResult<json> admitted =
        webhook_->Admit(*object, path.ns, req.get_header_value("Impersonate-User"));
    if (!admitted.ok()) return SendError(res, admitted.error());
    object = std::move(*admitted);
  }
  if (path.type->plural == "pods" && !object->contains("status")) {
    (*object)["status"] = {{"phase", "Pending"}};
  }
  ApiResult<ObjectPtr> created = store_.Create(*path.type, path.ns, std::move(*object));
  if (!created.ok()) return SendError(res, created.error());
  SendJson(res, 201, **created);
}

void ApiHandler::Replace(const RequestPath& path, const httplib::Request& req,
                         httplib::Response& res) {
  ApiResult<json> body = DecodeObject(req.body, *path.type, path);
  if (!body.ok()) return SendError(res, body.error());
  const bool status_only = path.subresource == "status";
  const bool keep_status = path.type->has_status;
  json replacement = std::move(*body);
  ApiResult<ObjectPtr> updated =
      store_.Update(*path.type, path.ns, path.name, [&](const json& current) -> ApiResult<json> {
        json next = replacement;
        if (status_only) {
          next = current;
          next["status"] = replacement.value("status", json::object());
          next["metadata"]["resourceVersion"] =
              replacement["metadata"].value("resourceVersion", json());
        } else if (keep_status) {
          next["status"] = current.value("status", json::object());
        }
        return AdmitUpdate(path, req, current, std::move(next));
      });
  if (!updated.ok()) return SendError(res, updated.error());
  SendJson(res, 200, **updated);
}

ApiResult<json> ApiHandler::AdmitUpdate(const RequestPath& path, const httplib::Request& req,
                                        const json& current, json next) const {
  if (path.type->plural != "pods" || !path.subresource.empty() || webhook_ == nullptr) return next;
  return webhook_->AdmitUpdate(current, next, path.ns, req.get_header_value("Impersonate-User"));
}

void ApiHandler::Patch(const RequestPath& path, const httplib::Request& req,
                       httplib::Response& res) {
  const bool status_only = path.subresource == "status";
  const bool keep_status = path.type->has_status;
  ApiResult<ObjectPtr> updated =
      store_.Update(*path.type, path.ns, path.name, [&](const json& current) -> ApiResult<json> {
        ApiResult<json> patched = ApplyPatch(req.get_header_value("Content-Type"), req.body,
                                             current, path.type->kind, path.name);
        if (!patched.ok()) return patched.error();
        if (!patched->is_object() || !(*patched)["metadata"].is_object()) {
          return BadRequest("the patch removed the object's metadata");
        }
        if (status_only) {
          json next = current;
          next["status"] = patched->value("status", json::object());
          next["metadata"]["resourceVersion"] =
              (*patched)["metadata"].value("resourceVersion", json());
          return next;
        }
        if (keep_status) (*patched)["status"] = current.value("status", json::object());
        return AdmitUpdate(path, req, current, std::move(*patched));
      });
  if (!updated.ok()) return SendError(res, updated.error());
  SendJson(res, 200, **updated);
}

void ApiHandler::Delete(const RequestPath& path, const httplib::Request& req,
                        httplib::Response& res) {
  std::string uid, rv;
  if (!req.body.empty()) {
    json options = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (options.is_discarded() || !options.is_object()) {
      return SendError(res, BadRequest("the DeleteOptions in the request body are not a JSON "
                                       "object"));
    }
    const json preconditions = options.value("preconditions", json::object());
    uid = Str(preconditions, "uid");
    rv = Str(preconditions, "resourceVersion");
  }
  ApiResult<ObjectPtr> deleted = store_.Delete(*path.type, path.ns, path.name, uid, rv);
  if (!deleted.ok()) return SendError(res, deleted.error());
  SendJson(res, 200, **deleted);
}

void ApiHandler::Bind(const RequestPath& path, const httplib::Request& req,
                      httplib::Response& res) {
  json binding = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (binding.is_discarded() || !binding.is_object()) {
    return SendError(
        res, UnrecognizedBody("Binding", "the request body is not a valid JSON object", req.body));
  }
  std::string kind = Str(binding, "kind");
  if (!kind.empty() && kind != "Binding") {
    std::string version = Str(binding, "apiVersion");
    return SendError(res, WrongKindError("Binding", "", kind, version.empty() ? "v1" : version));
  }
  const json meta = binding.value("metadata", json::object());
  if (!Str(meta, "name").empty() && Str(meta, "name") != path.name) {
    return SendError(res, BadRequest("the name of the object (" + Str(meta, "name") +
                                     ") does not match the name on the URL (" + path.name + ")"));
  }
  const std::string node = Str(binding.value("target", json::object()), "name");
  if (node.empty()) {
    return SendError(res, InvalidError("Binding", path.name, "target.name", "FieldValueRequired",
                                       "Required value"));
  }
  const std::string uid = Str(meta, "uid");
  ApiResult<ObjectPtr> bound =
      store_.Update(*path.type, path.ns, path.name, [&](const json& current) -> ApiResult<json> {
        const json& current_meta = current["metadata"];
        if (!uid.empty() && Str(current_meta, "uid") != uid) {
          return ConflictError("pods/binding", path.name,
                               "Precondition failed: UID in precondition: " + uid +
                                   ", UID in object meta: " + Str(current_meta, "uid"));
        }
        std::string assigned = Str(current.value("spec", json::object()), "nodeName");
        if (!assigned.empty()) {
          return ConflictError(
              "pods/binding", path.name,
              "pod " + path.name + " is already assigned to node \"" + assigned + "\"");
        }
        json next = current;
        next["spec"]["nodeName"] = node;
        if (meta.contains("annotations") && meta["annotations"].is_object()) {
          for (const auto& [k, v] : meta["annotations"].items()) {
            next["metadata"]["annotations"][k] = v;
          }
        }
        json conditions = json::array();
        for (const json& c : next["status"].value("conditions", json::array())) {
          if (Str(c, "type") != "PodScheduled") conditions.push_back(c);
        }
        conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}});
        next["status"]["conditions"] = conditions;
        next["metadata"].erase("resourceVersion");
        return next;
      });
  if (!bound.ok()) return SendError(res, bound.error());
  SendJson(res, 201,
           {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Success"},
            {"code", 201}});
}

}  // namespace tessera::testing
