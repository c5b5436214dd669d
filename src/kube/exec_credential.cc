#include "kube/exec_credential.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

#include "common/strings.h"

extern char** environ;

namespace tessera::kube {
namespace {

using json = nlohmann::json;
using SystemClock = std::chrono::system_clock;

// "2026-12-05T21:34:25Z", "2026-12-05T21:34:25.123+01:00".
std::optional<SystemClock::time_point> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && isdigit(static_cast<unsigned char>(text[at]))) ++at;
  }
  long offset = 0;
  std::string zone = text.substr(at);
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else {
    int hours = 0, minutes = 0;
    char sign = 0;
    int zone_len = 0;
    if (sscanf(zone.c_str(), "%c%2d:%2d%n", &sign, &hours, &minutes, &zone_len) != 3 ||
        zone_len != static_cast<int>(zone.size()) || (sign != '+' && sign != '-')) {
      return std::nullopt;
    }
    offset = (sign == '+' ? 1 : -1) * (hours * 3600L + minutes * 60L);
  }
  time_t seconds = timegm(&tm);
  if (seconds == -1) return std::nullopt;
  return SystemClock::from_time_t(seconds - offset);
}

std::string Where(const ExecConfig& config) {
  return config.origin.empty() ? "" : " (" + config.origin + ")";
}

// The environment of the plugin: ours, then the configured variables, then KUBERNETES_EXEC_INFO.
std::vector<std::string> PluginEnvironment(const ExecConfig& config, bool interactive) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : config.env) vars[name] = value;
  json spec = {{"interactive", interactive}};
  if (config.provide_cluster_info) spec["cluster"] = config.cluster;
  vars["KUBERNETES_EXEC_INFO"] =
      json{{"apiVersion", config.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}.dump();
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

struct Finished {
  std::string output;
  int exit_code = 0;
};

// Runs `argv` with `envp`, stdout captured, stderr shared, stdin shared or /dev/null. The error of
// a failed start carries its errno (ENOENT: no such program).
Result<Finished> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                       bool share_stdin, int& spawn_errno) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoStatus("creating a pipe", "", errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  if (!share_stdin) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  std::vector<char*> c_argv, c_envp;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (const std::string& e : envp) c_envp.push_back(const_cast<char*>(e.c_str()));
  c_envp.push_back(nullptr);
  pid_t pid = 0;
  bool has_slash = argv[0].find('/') != std::string::npos;
  spawn_errno =
      has_slash
          ? posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, c_argv.data(), c_envp.data())
          : posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, c_argv.data(), c_envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawn_errno != 0) {
    close(pipe_fds[0]);
    return ErrnoStatus("starting", argv[0], spawn_errno);
  }
  Finished done;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      done.output.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  done.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return done;
}

}  // namespace

Result<ExecCredential> ParseExecCredential(const std::string& output,
                                           const std::string& api_version) {
  json doc = json::parse(output, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("the exec plugin's output is not a JSON ExecCredential");
  }
  std::string kind = doc.value("kind", std::string());
  std::string version = doc.value("apiVersion", std::string());
  if (kind != "ExecCredential" || version != api_version) {
    return InvalidArgument("the exec plugin is configured for " + api_version +
                           " but returned kind \"" + kind + "\" of apiVersion \"" + version + "\"");
  }
  if (!doc.contains("status") || !doc["status"].is_object()) {
    return InvalidArgument("the exec plugin's ExecCredential has no status");
  }
  const json& status = doc["status"];
  ExecCredential cred;
  cred.token = status.value("token", std::string());
  cred.client_cert_pem = status.value("clientCertificateData", std::string());
  cred.client_key_pem = status.value("clientKeyData", std::string());
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return InvalidArgument(
        "the exec plugin returned only one of clientCertificateData and clientKeyData; both are "
        "needed");
  }
  if (cred.token.empty() && cred.client_cert_pem.empty()) {
    return InvalidArgument(
        "the exec plugin returned neither a token nor a client certificate and key");
  }
  std::string expires = status.value("expirationTimestamp", std::string());
  if (!expires.empty()) {
    cred.expires = ParseRfc3339(expires);
    if (!cred.expires) {
      return InvalidArgument("the exec plugin's expirationTimestamp \"" + expires +
                             "\" is not an RFC 3339 time");
    }
  }
  return cred;
}

Result<ExecCredential> RunExecPlugin(const ExecConfig& config, bool stdin_is_terminal) {
  bool interactive = false;
  if (config.interactive_mode == "Always") {
    if (!stdin_is_terminal) {
      return FailedPrecondition("exec plugin " + config.command + Where(config) +
                                " has interactiveMode Always, but standard input is not a "
                                "terminal");
    }
    interactive = true;
  } else if (config.interactive_mode == "IfAvailable") {
    interactive = stdin_is_terminal;
  }
  std::vector<std::string> argv = {config.command};
  argv.insert(argv.end(), config.args.begin(), config.args.end());
  int spawn_errno = 0;
  Result<Finished> done =
      Spawn(argv, PluginEnvironment(config, interactive), interactive, spawn_errno);
  if (!done.ok()) {
    if (spawn_errno == ENOENT) {
      std::string hint = config.install_hint.empty() ? "install it, or put it on PATH"
                                                     : std::string(Trim(config.install_hint));
      return NotFound("exec plugin " + config.command + Where(config) + " was not found: " + hint);
    }
    return done.status().WithContext("exec plugin" + Where(config));
  }
  if (done->exit_code != 0) {
    return Unavailable("exec plugin " + config.command + Where(config) + " failed with exit code " +
                       std::to_string(done->exit_code));
  }
  Result<ExecCredential> cred = ParseExecCredential(done->output, config.api_version);
  if (!cred.ok()) return cred.status().WithContext("exec plugin " + config.command + Where(config));
  return cred;
}

ExecCredentialSource::ExecCredentialSource(ExecConfig config) : config_(std::move(config)) {}

Result<ExecCredential> ExecCredentialSource::Current() {
  return CurrentAt(SystemClock::now());
}

bool ExecCredentialSource::Forget(const std::string& token) {
  std::lock_guard lock(mutex_);
  if (!cached_ || cached_->token != token) return false;
  cached_.reset();
  return true;
}

Result<ExecCredential> ExecCredentialSource::CurrentAt(SystemClock::time_point now) {
  std::lock_guard lock(mutex_);
  if (cached_ && (!cached_->expires || now < *cached_->expires)) return *cached_;
  ASSIGN_OR_RETURN(ExecCredential fresh, RunExecPlugin(config_, isatty(STDIN_FILENO) == 1));
  cached_ = fresh;
  return fresh;
}

}  // namespace tessera::kube
