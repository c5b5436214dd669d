// TokenSource: the bearer token for API requests: fixed, read from a file that rotates, what an
// exec credential plugin returns (kube/exec_credential.h: run again when its token expires), or
// an oidc auth-provider's id-token (kube/oidc_token.h: checked at every request; once expired,
// refreshed with the refresh-token and written back to the kubeconfig, kube/oidc_refresh.h).
//
// A file-backed source re-reads the file when its copy is older than `refresh` (about a minute,
// as client-go does for projected service-account tokens). If a re-read fails, the last good token
// is kept and the failure is logged; only a source that never read the file reports the error.
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/status.h"
#include "kube/exec_credential.h"
#include "kube/oidc_token.h"

namespace tessera::kube {

class TokenSource {
 public:
  using Clock = std::chrono::steady_clock;

  // No token at all: Token() returns "".
  TokenSource() = default;
  static TokenSource Fixed(std::string token);
  static TokenSource FromFile(std::string path, Clock::duration refresh = std::chrono::minutes(1));
  // The token of the plugin's credential ("" when it returned only a client certificate).
  static TokenSource FromExec(std::shared_ptr<ExecCredentialSource> exec);
  // The id-token while it is valid; then a refreshed one (an error saying how to log in again when
  // there is no refresh-token or the refresh fails).
  static TokenSource FromOidc(OidcConfig oidc);

  TokenSource(TokenSource&& other) noexcept;

  // The current token ("" for none); reads the file when due.
  Result<std::string> Token();

  // The server refused `token` (401): an exec plugin's credential is fetched anew at the next
  // Token() (true: a retry may send another token); a fixed or file token is kept (false).
  bool Refused(const std::string& token);

  // Testing hook: the token as of `now`.
  Result<std::string> TokenAt(Clock::time_point now);

 private:
  // The oidc id-token, refreshed when it has expired. Called with mutex_ held.
  Result<std::string> OidcToken();

  std::string path_;                            // constant after construction; "" for a fixed token
  std::shared_ptr<ExecCredentialSource> exec_;  // constant after construction; thread-safe
  Clock::duration refresh_{};

  std::mutex mutex_;
  std::string token_;               // guarded by mutex_
  Clock::time_point read_at_;       // guarded by mutex_
  bool have_token_ = false;         // guarded by mutex_
  std::optional<OidcConfig> oidc_;  // guarded by mutex_ (a refresh replaces its tokens)
};

}  // namespace tessera::kube
