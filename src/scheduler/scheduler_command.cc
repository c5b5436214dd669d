#include "scheduler/scheduler_command.h"

#include <signal.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "annotations/signing.h"
#include "common/strings.h"
#include "kube/config_keys.h"
#include "log/log.h"
#include "scheduler/scheduler_app.h"

namespace tessera::scheduler {
namespace {

// A replica being deleted still gets requests until every kube-proxy has dropped its endpoint and
// the API server's webhook calls already on their way arrive: stopping at once made them time out
// (a pod create refused by the mutating webhook during a rollout). So it first says it is not
// ready and serves for `delay`; a second signal cuts that short.
void Drain(SchedulerApp& app, std::chrono::milliseconds delay, const sigset_t& stop) {
  if (delay.count() <= 0) return;
  app.Drain();
  log::Info("not ready; serving on before stopping",
            {{"shutdown-delay", std::to_string(delay.count()) + "ms"}});
  const auto end = std::chrono::steady_clock::now() + delay;
  for (auto left = delay; left.count() > 0;
       left = std::chrono::duration_cast<std::chrono::milliseconds>(
           end - std::chrono::steady_clock::now())) {
    timespec wait{static_cast<time_t>(left.count() / 1000),
                  static_cast<long>(left.count() % 1000) * 1000000};
    int sig = sigtimedwait(&stop, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      log::Info("second signal: stopping now");
      return;
    }
  }
}

int Run(const config::Config& cfg, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "tessera scheduler: unexpected argument \"" << args[0]
              << "\" (all settings are flags, see --help)\n";
    return 2;
  }
  const std::string key_file = cfg.GetString("scheduler.annotation-key-file");
  Result<annotations::Signing> signing = annotations::Signing::FromKeyFile(key_file);
  if (!signing.ok()) {
    std::cerr << "tessera scheduler: " << signing.status().message() << "\n";
    return 2;
  }
  // Block the stop signals before any thread starts, so that every thread inherits the mask and
  // only the sigtimedwait below receives them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  std::unique_ptr<kube::Client> client = kube::CommandClient(cfg);
  if (client == nullptr) return 1;
  AppOptions options = AppOptions::FromConfig(cfg);
  options.signing = *signing;
  SchedulerApp app(*client, options);
  Status started = app.Start();
  if (!started.ok()) {
    log::Error("cannot start the scheduler's HTTP server", {{"error", started.message()}});
    return 1;
  }
  log::Info("tessera scheduler serving", {{"listen", options.server.listen},
                                          {"port", std::to_string(app.port())},
                                          {"tls", app.tls() ? "on" : "off"},
                                          {"api-server", client->transport().server()},
                                          {"scheduler-name", options.scheduler_name}});
  annotations::LogSigning(options.signing, "scheduler.annotation-key-file", key_file);
  if (options.server.client_ca.empty()) {
    log::Warn(
        "the extender and webhook endpoints serve any client that reaches the port; set "
        "scheduler.tls.client-ca to require client certificates (docs/install.md)");
  } else {
    log::Info("client certificates required",
              {{"client-ca", options.server.client_ca},
               {"extender-clients", Join(options.server.extender_clients, ",")},
               {"webhook-clients", Join(options.server.webhook_clients, ",")}});
  }

  bool ready = false;
  for (;;) {
    if (!ready && app.WaitForSync(std::chrono::milliseconds(0))) {
      ready = true;
      log::Info("nodes and pods synced from the API server; ready",
                {{"gpu-nodes", std::to_string(app.state().NodeCount())}});
    }
    timespec tick{1, 0};
    int sig = sigtimedwait(&stop, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      log::Info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      break;
    }
  }
  Drain(app, options.shutdown_delay, stop);
  app.Stop();
  return 0;
}

}  // namespace

config::Command SchedulerCommand() {
  return {.name = "scheduler",
          .summary = "run the GPU scheduler extender, admission webhook and metrics server",
          .key_prefixes = {"scheduler", "kube"},
          .run = Run};
}

}  // namespace tessera::scheduler
