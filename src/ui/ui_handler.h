// The web page's HTTP answers, without the HTTP server: which embedded file a path under /ui/
// names, with its content type, ETag, caching and security headers, or 304 / 404. The server
// side (ui_routes.h) only copies these into its response.
//
//   UiResponse r = ServeUi("app.mjs", req_if_none_match);  // 200 with the file, or 304
//   UiResponse r = ServeUi("", "");                         // index.html
//
// Pure functions over constant data; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::ui {

// Where the page lives on the scheduler's port (beside /inspect, which it reads as "../inspect").
inline constexpr char kUiPath[] = "/ui/";

// The Content-Security-Policy of every answer: the page's own scripts, styles, images and
// requests only (no inline script or style attribute, no other origin, no framing, no forms).
inline constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct UiResponse {
  int status = 200;          // 200, 304 or 404
  std::string content_type;  // empty for 304
  std::string_view body;     // the embedded file (200) or static text (404); empty for 304
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
};

// The answer for `name`, the path below /ui/ ("" = index.html). `if_none_match` is the request's
// If-None-Match header (empty when absent): 304 without a body when it names the file's ETag
// (or is "*"). 200 files carry ETag and "Cache-Control: no-cache" (the browser asks again each
// time and gets 304 while the file is unchanged, so a new scheduler's page is used at once).
// Every answer carries the security headers; an unknown name is 404, "no-store".
UiResponse ServeUi(std::string_view name, std::string_view if_none_match);

// The Content-Type for a file name by its extension; "application/octet-stream" for others.
std::string_view ContentTypeFor(std::string_view name);

// Whether an If-None-Match value (a list of entity tags, or "*") names `etag`, compared weakly
// as RFC 9110 asks for If-None-Match (W/"x" matches "x").
bool EtagMatches(std::string_view if_none_match, std::string_view etag);

}  // namespace tessera::ui
