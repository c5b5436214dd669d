#include "ui/ui_routes.h"

#include <string>

#include "ui/ui_handler.h"

namespace tessera::ui {

void AddUiRoutes(httplib::Server& server) {
  server.Get("/ui", [](const httplib::Request&, httplib::Response& res) {
    // Relative, so that it also holds behind a proxy that serves the scheduler under a prefix.
    res.set_redirect("ui/", 301);
  });
  server.Get(R"(/ui/(.*))", [](const httplib::Request& req, httplib::Response& res) {
    UiResponse r = ServeUi(req.matches[1].str(), req.get_header_value("If-None-Match"));
    res.status = r.status;
    for (const auto& [name, value] : r.headers) res.set_header(name, value);
    if (r.status != 304) res.set_content(std::string(r.body), r.content_type);
  });
}

}  // namespace tessera::ui
