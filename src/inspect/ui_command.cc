#include "inspect/ui_command.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "annotations/names.h"
#include "common/strings.h"
#include "inspect/inspect_command.h"
#include "inspect/ui_proxy.h"
#include "inspect/version_command.h"
#include "kube/objects.h"

extern char** environ;

namespace tessera::inspect {
namespace {

constexpr int kDefaultPort = 8420;
constexpr int kSchedulerPort = 8443;  // deploy/scheduler: the container port named "https"
constexpr char kDefaultNamespace[] = "tessera-system";
using annotations::kLeaderLabel;

struct SchedulerPod {
  std::string ns, name;
  int port = kSchedulerPort;
};

bool IsReady(const kube::Json& pod) {
  for (const kube::Json& c : pod.value("/status/conditions"_json_pointer, kube::Json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

// The "https" container port of the scheduler's pod, else its first one, else 8443.
int PortOf(const kube::Json& pod) {
  int first = 0;
  for (const kube::Json& c : pod.value("/spec/containers"_json_pointer, kube::Json::array())) {
    for (const kube::Json& p : c.value("ports", kube::Json::array())) {
      int port = p.value("containerPort", 0);
      if (p.value("name", "") == "https" && port > 0) return port;
      if (first == 0) first = port;
    }
  }
  return first > 0 ? first : kSchedulerPort;
}

bool IsLeader(const kube::Json& pod) {
  const std::map<std::string, std::string> labels = kube::Labels(pod);
  auto it = labels.find(kLeaderLabel);
  return it != labels.end() && it->second == "true";
}

// A running scheduler pod of namespace `ns`: the leader first (only it has the pending pods'
// filter reasons), then a ready one, then by name.
Result<SchedulerPod> FindScheduler(kube::Client& client, const std::string& ns) {
  Result<kube::ObjectList> pods =
      client.List(kube::kPods, {.ns = ns, .label_selector = kSchedulerPodSelector});
  if (!pods.ok()) {
    return pods.status().WithContext("cannot list the scheduler's pods (label " +
                                     std::string(kSchedulerPodSelector) + ") in namespace " + ns);
  }
  auto rank = [](const kube::Json& pod) { return 2 * IsLeader(pod) + IsReady(pod); };
  const kube::Json* best = nullptr;
  for (const kube::Json& pod : pods->items) {
    if (kube::PhaseOf(pod) != "Running" ||
        pod.contains("/metadata/deletionTimestamp"_json_pointer)) {
      continue;
    }
    if (best == nullptr || rank(pod) > rank(*best) ||
        (rank(pod) == rank(*best) && kube::NameOf(pod) < kube::NameOf(*best))) {
      best = &pod;
    }
  }
  if (best == nullptr) {
    return NotFound("no running Tessera scheduler pod (label " +
                    std::string(kSchedulerPodSelector) + ") in namespace " + ns +
                    "; is Tessera installed in this cluster, in another namespace (-n)? (kubectl "
                    "tessera version lists its pods in every namespace)");
  }
  return SchedulerPod{kube::NamespaceOf(*best), kube::NameOf(*best), PortOf(*best)};
}

// The message of the API server's own error answer (a meta/v1 Status), or nullopt when the
// body is not one (then the scheduler answered).
std::optional<std::string> ApiServerError(const kube::HttpResponse& answer) {
  kube::Json body = kube::Json::parse(answer.body, nullptr, false);
  if (!body.is_object() || body.value("kind", "") != "Status") return std::nullopt;
  return body.value("message", std::string("HTTP ") + std::to_string(answer.status));
}

// The pod's proxy path where the scheduler serves its page: https first, then http (a scheduler
// without a certificate). Errors say who refused what and what to do.
Result<std::string> FindPage(kube::Client& client, const SchedulerPod& pod,
                             std::chrono::milliseconds timeout) {
  const std::string who = "the scheduler's pod " + pod.ns + "/" + pod.name;
  std::string unreachable;
  for (const char* scheme : {"https", "http"}) {
    const std::string upstream = "/api/v1/namespaces/" + pod.ns + "/pods/" + scheme + ":" +
                                 pod.name + ":" + std::to_string(pod.port) + "/proxy";
    Result<kube::HttpResponse> answer = client.Send(
        {.path = upstream + "/ui/", .headers = {"Accept: text/html"}, .timeout = timeout});
    if (!answer.ok()) return answer.status().WithContext("cannot reach the API server");
    if (answer->status == 200) return upstream;
    if (std::optional<std::string> refused = ApiServerError(*answer)) {
      if (answer->status == 401 || answer->status == 403) {
        return Status(StatusCode::kPermissionDenied,
                      "the API server does not let you reach " + who + ": " + *refused +
                          " (needs get on pods/proxy in namespace " + pod.ns +
                          ", and create for the page's would-it-fit form)");
      }
      if (answer->status == 404) {
        return NotFound(who + " is gone (" + *refused + "); try again");
      }
      unreachable += std::string(unreachable.empty() ? "" : "; ") + scheme + ": " + *refused;
      continue;  // another scheme, or the pod does not answer
    }
    if (answer->status == 404) {
      return NotFound(
          "the scheduler (" + pod.ns + "/" + pod.name +
          ") serves no web page: it runs with scheduler.ui.enabled=false (turn it on: helm "
          "upgrade ... --set scheduler.ui.enabled=true, or the flag --scheduler.ui.enabled=true; "
          "docs/ui.md)");
    }
    return Unavailable("the scheduler (" + pod.ns + "/" + pod.name + ") answered HTTP " +
                       std::to_string(answer->status) +
                       " to GET /ui/: " + std::string(Trim(answer->body.substr(0, 300))));
  }
  return Unavailable("the API server cannot reach " + who + " on port " + std::to_string(pod.port) +
                     " (" + unreachable + ")");
}

std::string UrlHost(const std::string& address) {
  return address.find(':') != std::string::npos ? "[" + address + "]" : address;
}

// Starts `argv` with its output discarded and reaps it on a thread of its own. The child gets an
// empty signal mask (this thread blocks SIGINT and SIGTERM for sigwait) and a process group of
// its own, so Ctrl-C here does not reach the browser.
Status Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) return NotFound(argv[0] + " is not on PATH");
  if (rc != 0) return Unavailable("cannot start " + argv[0] + ": " + std::strerror(rc));
  std::thread([pid] { waitpid(pid, nullptr, 0); }).detach();
  return Status::Ok();
}

Status OpenBrowser(const std::string& url) {
  const char* browser = std::getenv("BROWSER");
  if (browser != nullptr && *browser != '\0') {
    // $BROWSER: commands separated by ':', the first is used; the URL is its last argument.
    std::string command(browser);
    command = command.substr(0, command.find(':'));
    return Spawn({"/bin/sh", "-c", command + " \"$1\"", "sh", url});
  }
#ifdef __APPLE__
  return Spawn({"open", url});
#else
  if (std::getenv("DISPLAY") == nullptr && std::getenv("WAYLAND_DISPLAY") == nullptr) {
    return NotFound(
        "no browser to open: $BROWSER is not set and there is no display (DISPLAY, "
        "WAYLAND_DISPLAY) for xdg-open");
  }
  return Spawn({"xdg-open", url});
#endif
}

}  // namespace

void AddUiKeys(config::Schema& schema) {
  schema.Add({.path = "ui.port",
              .type = config::Type::kInt,
              .default_value = std::to_string(kDefaultPort),
              .help = "local port of kubectl tessera ui's page (0: any free port)",
              .min = 0,
              .max = 65535,
              .flags = {"port"}});
  schema.Add({.path = "ui.address",
              .type = config::Type::kString,
              .default_value = "127.0.0.1",
              .help = "local address of kubectl tessera ui's page: a loopback address "
                      "(127.0.0.1, ::1, localhost), since it carries your credentials",
              .flags = {"address"}});
  schema.Add({.path = "ui.no-browser",
              .type = config::Type::kBool,
              .default_value = "false",
              .help = "print the page's address without opening a browser",
              .flags = {"no-browser"}});
  schema.Add({.path = "ui.namespace",
              .type = config::Type::kString,
              .default_value = kDefaultNamespace,
              .help = "namespace of the Tessera scheduler's pods that kubectl tessera ui reaches "
                      "(-n NAMESPACE sets it too); no other namespace is searched"});
}

UiHooks ProcessUiHooks() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return {.wait =
              [stop] {
                int signal = 0;
                sigwait(&stop, &signal);
              },
          .open_browser = OpenBrowser};
}

int RunUi(const config::Config& config, const std::vector<std::string>& positional,
          const kube::Environment& env, const UiHooks& hooks, std::ostream& out,
          std::ostream& err) {
  if (!positional.empty()) {
    err << "kubectl tessera ui: takes no arguments, got " << positional[0]
        << "; usage: kubectl tessera ui [--port 8420] [--address 127.0.0.1] [--no-browser] "
           "[-n NAMESPACE]\n";
    return 2;
  }
  Result<std::chrono::milliseconds> timeout = RequestTimeout(config);
  if (!timeout.ok()) {
    err << "kubectl tessera ui: " << timeout.status().message() << "\n";
    return 2;
  }
  const std::string address = config.GetString("ui.address");
  if (!IsLoopbackAddress(address)) {
    err << "kubectl tessera ui: --address " << address
        << ": give a loopback address (127.0.0.1, ::1 or localhost); the page is served with your "
           "Kubernetes credentials, so it is not offered to other machines\n";
    return 2;
  }
  // -n (inspect.namespace) when given, else ui.namespace: never every namespace, where any pod
  // with the scheduler's label (a decoy) would be served with the user's credentials.
  const bool namespace_given =
      config.SourceOf("inspect.namespace").kind != config::Source::Kind::kDefault;
  const std::string ns = config.GetString(namespace_given ? "inspect.namespace" : "ui.namespace");
  if (ns.empty()) {
    err << "kubectl tessera ui: " << (namespace_given ? "-n" : "ui.namespace")
        << " is empty: name the namespace of the Tessera scheduler (tessera-system by default); "
           "ui does not search every namespace\n";
    return 2;
  }
  Result<std::unique_ptr<kube::Client>> client = InspectClient(config, env, *timeout);
  Result<SchedulerPod> pod =
      client.ok() ? FindScheduler(**client, ns) : Result<SchedulerPod>(client.status());
  Result<std::string> upstream =
      pod.ok() ? FindPage(**client, *pod, *timeout) : Result<std::string>(pod.status());
  if (!upstream.ok()) {
    err << "kubectl tessera ui: " << upstream.status().message() << "\n";
    return 1;
  }
  UiProxy proxy(**client, {.address = address,
                           .port = static_cast<int>(config.GetInt("ui.port")),
                           .upstream = *upstream,
                           .timeout = *timeout});
  if (Status started = proxy.Start(); !started.ok()) {
    err << "kubectl tessera ui: " << started.message() << "\n";
    return 1;
  }
  const std::string url =
      "http://" + UrlHost(address) + ":" + std::to_string(proxy.port()) + "/ui/";
  out << "Serving the Tessera scheduler's page (pod " << pod->ns << "/" << pod->name
      << ", through the API server) at " << url << "\nPress Ctrl-C to stop.\n"
      << std::flush;
  if (!config.GetBool("ui.no-browser")) {
    Status opened = hooks.open_browser(url);
    if (!opened.ok()) err << "kubectl tessera ui: " << opened.message() << "; open " << url << "\n";
  }
  hooks.wait();
  proxy.Stop();
  return 0;
}

}  // namespace tessera::inspect
