#include "ui/ui_handler.h"

#include "ui/assets.h"

namespace tessera::ui {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void AddSecurityHeaders(UiResponse& r) {
  r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  // For browsers that predate CSP's frame-ancestors.
  r.headers.emplace_back("X-Frame-Options", "DENY");
}

}  // namespace

std::string_view ContentTypeFor(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      // Browsers run modules only when served with a JavaScript type (never sniffed: nosniff).
      {".mjs", "text/javascript; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".json", "application/json"},
  };
  for (const auto& [ext, type] : kTypes) {
    if (EndsWith(name, ext)) return type;
  }
  return "application/octet-stream";
}

bool EtagMatches(std::string_view if_none_match, std::string_view etag) {
  if (Trim(if_none_match) == "*") return true;
  while (!if_none_match.empty()) {
    size_t comma = if_none_match.find(',');
    std::string_view tag = Trim(if_none_match.substr(0, comma));
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (!tag.empty() && tag == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

UiResponse ServeUi(std::string_view name, std::string_view if_none_match) {
  if (name.empty()) name = "index.html";
  UiResponse r;
  for (const Asset& a : Assets()) {
    if (a.name != name) continue;
    r.headers.emplace_back("ETag", std::string(a.etag));
    r.headers.emplace_back("Cache-Control", "no-cache");
    AddSecurityHeaders(r);
    if (!if_none_match.empty() && EtagMatches(if_none_match, a.etag)) {
      r.status = 304;
      return r;
    }
    r.status = 200;
    r.content_type = ContentTypeFor(a.name);
    r.body = a.body;
    return r;
  }
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "no such file of the Tessera page under /ui/ (the page is at /ui/)\n";
  r.headers.emplace_back("Cache-Control", "no-store");
  AddSecurityHeaders(r);
  return r;
}

}  // namespace tessera::ui
