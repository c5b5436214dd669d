// `kubectl tessera ui [--port 8420] [--address 127.0.0.1] [--no-browser] [-n NAMESPACE]`: opens
// the Tessera scheduler's web page (docs/ui.md) on this machine. Finds a running scheduler pod
// (label app.kubernetes.io/name=tessera-scheduler, in -n or ui.namespace, tessera-system by
// default, never another; the leader first, then a ready one), checks through the
// API server's pods/proxy that it serves the page (https, else http, on its "https" container
// port), then serves it locally through a UiProxy until interrupted, prints the address and opens
// a browser when one is found. kubectl's connection flags and kube.* keys apply as for inspect.
// Keys (prefix "ui"): address, port, no-browser, namespace.
// Exit codes: 0 stopped by the user; 1 no scheduler, no page, no answer, or the local port is
// taken; 2 bad arguments (a non-loopback --address, a port out of range, a bad timeout, an empty
// namespace).
// Thread-compatible: one run at a time.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/config.h"
#include "config/schema.h"
#include "kube/connection.h"

namespace tessera::inspect {

void AddUiKeys(config::Schema& schema);

// What the command does around serving, replaceable in tests.
struct UiHooks {
  // Called once the page is served; returns when the command should stop.
  std::function<void()> wait;
  // Opens `url` in a browser. Ok when one was started; NotFound (with what was looked for) when
  // there is none; another error when starting it failed.
  std::function<Status(const std::string& url)> open_browser;
};

// The hooks of the real command: waits for SIGINT or SIGTERM (blocked here in the calling thread,
// so call this before starting threads), and opens the browser with $BROWSER, xdg-open (with a
// display) or open (macOS), without waiting for it.
UiHooks ProcessUiHooks();

int RunUi(const config::Config& config, const std::vector<std::string>& positional,
          const kube::Environment& env, const UiHooks& hooks, std::ostream& out, std::ostream& err);

}  // namespace tessera::inspect
