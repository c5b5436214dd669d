// Mounts the web page on an httplib server: GET /ui/<file> answers with ServeUi (ui_handler.h),
// GET /ui redirects to /ui/ (the page's relative links need the slash). HEAD is answered as GET
// without the body (httplib). Call before the server listens; the routes hold no state.
#pragma once

#include <httplib.h>

namespace tessera::ui {

void AddUiRoutes(httplib::Server& server);

}  // namespace tessera::ui
