// The `oidc` auth-provider of a kubeconfig user, as client-go reads it: the `id-token` in the
// user's auth-provider config is sent as the bearer token while its JWT `exp` claim lies more
// than 10 s ahead. Once it has expired, a user with a `refresh-token` gets a new id-token from the
// issuer (kube/oidc_refresh.h, run by TokenSource); without one, the expired token is an error that
// says how to log in again. Pure values and functions: thread-safe.
//
//   ASSIGN_OR_RETURN(OidcConfig oidc, ParseOidcConfig(config_map, "kubeconfig ... user u"));
//   ASSIGN_OR_RETURN(std::string token, OidcIdToken(oidc, std::chrono::system_clock::now()));
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "common/status.h"

namespace tessera::kube {

struct OidcConfig {
  std::string issuer_url;     // idp-issuer-url
  std::string client_id;      // client-id
  std::string client_secret;  // client-secret ("" for a public client)
  std::string id_token;       // id-token ("" when the user never logged in)
  std::string refresh_token;  // refresh-token ("": an expired id-token cannot be refreshed)
  // The issuer's CA: idp-certificate-authority (a file) or idp-certificate-authority-data (PEM).
  std::string ca_file, ca_pem;
  // Where refreshed tokens are written back, as kubectl writes them: the kubeconfig file that
  // defines the user, and the user's name ("" path: a kubeconfig given as text, kept in memory).
  std::string kubeconfig_path, user_name;
  std::string origin;  // "kubeconfig /root/.kube/config user u", for errors
};

// auth-provider.config of a user whose provider is "oidc" (kubeconfig_path and user_name are left
// to the caller). InvalidArgument, as client-go, when idp-issuer-url or client-id is missing, and
// for idp-certificate-authority-data that is not base64.
Result<OidcConfig> ParseOidcConfig(const std::map<std::string, std::string>& config,
                                   const std::string& origin);

// The id-token when it is valid at `now` (its exp more than 10 s away). InvalidArgument for a
// token that is not a JWT or whose payload cannot be read; FailedPrecondition when there is no
// token or it has expired (a JWT without exp counts as expired, as in client-go): the caller may
// refresh then. Each message says how to log in again.
Result<std::string> OidcIdToken(const OidcConfig& oidc, std::chrono::system_clock::time_point now);

}  // namespace tessera::kube
