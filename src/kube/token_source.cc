#include "kube/token_source.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "kube/oidc_refresh.h"
#include "log/log.h"

namespace tessera::kube {

namespace {

// The limit of each of a refresh's two requests (discovery, token).
constexpr std::chrono::seconds kOidcRefreshTimeout{30};

}  // namespace

TokenSource TokenSource::Fixed(std::string token) {
  TokenSource source;
  source.token_ = std::move(token);
  source.have_token_ = true;
  return source;
}

TokenSource TokenSource::FromFile(std::string path, Clock::duration refresh) {
  TokenSource source;
  source.path_ = std::move(path);
  source.refresh_ = refresh;
  return source;
}

TokenSource TokenSource::FromExec(std::shared_ptr<ExecCredentialSource> exec) {
  TokenSource source;
  source.exec_ = std::move(exec);
  return source;
}

TokenSource TokenSource::FromOidc(OidcConfig oidc) {
  TokenSource source;
  source.oidc_ = std::move(oidc);
  return source;
}

TokenSource::TokenSource(TokenSource&& other) noexcept {
  std::lock_guard lock(other.mutex_);
  path_ = std::move(other.path_);
  exec_ = std::move(other.exec_);
  oidc_ = std::move(other.oidc_);
  refresh_ = other.refresh_;
  token_ = std::move(other.token_);
  read_at_ = other.read_at_;
  have_token_ = other.have_token_;
}

bool TokenSource::Refused(const std::string& token) {
  return exec_ != nullptr && exec_->Forget(token);
}

Result<std::string> TokenSource::OidcToken() {
  Result<std::string> token = OidcIdToken(*oidc_, std::chrono::system_clock::now());
  // Only a missing or expired token is refreshed (client-go's rule); a malformed one is an error.
  if (token.ok() || oidc_->refresh_token.empty() ||
      token.status().code() != StatusCode::kFailedPrecondition) {
    return token;
  }
  ASSIGN_OR_RETURN(OidcTokens fresh, RefreshOidcTokens(*oidc_, kOidcRefreshTimeout));
  OidcConfig next = *oidc_;
  next.id_token = fresh.id_token;
  if (!fresh.refresh_token.empty()) next.refresh_token = fresh.refresh_token;
  // As client-go: tokens that cannot be written back are not used.
  RETURN_IF_ERROR(
      PersistOidcTokens(next).WithContext(next.origin + ": could not persist new tokens"));
  *oidc_ = std::move(next);
  log::Info("refreshed the oidc id-token", {{"user", oidc_->origin}});
  return oidc_->id_token;
}

Result<std::string> TokenSource::Token() {
  return TokenAt(Clock::now());
}

Result<std::string> TokenSource::TokenAt(Clock::time_point now) {
  if (exec_) {
    ASSIGN_OR_RETURN(ExecCredential cred, exec_->Current());
    return cred.token;
  }
  std::lock_guard lock(mutex_);
  if (oidc_) return OidcToken();
  if (path_.empty()) return token_;
  if (have_token_ && now - read_at_ < refresh_) return token_;
  std::ifstream in(path_, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    Status error = ErrnoStatus("reading bearer token", path_, errno);
    if (!have_token_) return error;
    log::Warn("keeping the previous bearer token", {{"error", error.message()}});
    read_at_ = now;  // try again after another refresh period, not on every request
    return token_;
  }
  token_ = std::string(Trim(text.str()));
  read_at_ = now;
  have_token_ = true;
  return token_;
}

}  // namespace tessera::kube
