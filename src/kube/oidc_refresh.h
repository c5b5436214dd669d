// Refreshing an oidc auth-provider's expired id-token, as client-go does: OpenID Connect discovery
// (GET {idp-issuer-url}/.well-known/openid-configuration) gives the issuer's token_endpoint; a
// refresh_token grant there (client_id, and client_secret when set, in the form) answers a new
// id_token and perhaps a new refresh_token. Both are written back into the kubeconfig file that
// defines the user, as kubectl writes them (under its "<file>.lock" lock file), so the next run and
// kubectl itself use them; an identity provider that rotates refresh tokens would otherwise leave
// the file with a spent one. Functions without shared state: thread-safe, but two writers of one
// kubeconfig are kept apart only by the lock file.
//
//   ASSIGN_OR_RETURN(OidcTokens fresh, RefreshOidcTokens(oidc, std::chrono::seconds(30)));
//   oidc.id_token = fresh.id_token; ...; RETURN_IF_ERROR(PersistOidcTokens(oidc));
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "kube/oidc_token.h"

namespace tessera::kube {

struct OidcTokens {
  std::string id_token;
  std::string refresh_token;  // "" when the issuer kept the old one
};

// Asks the issuer for new tokens with oidc.refresh_token, each request bounded by `timeout`.
// Unavailable when the issuer cannot be reached or refuses (its status and the start of its
// answer in the message, as client-go words it); InvalidArgument for a discovery document without
// token_endpoint or an answer without id_token.
Result<OidcTokens> RefreshOidcTokens(const OidcConfig& oidc, std::chrono::milliseconds timeout);

// Writes oidc.id_token and oidc.refresh_token into users[oidc.user_name].user.auth-provider.config
// of oidc.kubeconfig_path (nothing to do when the path is ""), replacing the file whole (its
// permissions kept). The file is unchanged on any error: one naming the file (absent, not YAML,
// the user gone, the lock file present).
Status PersistOidcTokens(const OidcConfig& oidc);

}  // namespace tessera::kube
