#include "kube/oidc_token.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <optional>

#include "common/strings.h"

namespace tessera::kube {

namespace {

// client-go counts a token as expired this long before its exp, for clock skew.
constexpr std::chrono::seconds kExpiryDelta{10};

// The payload of a JWT: base64url without padding.
std::optional<std::string> DecodeBase64Url(std::string text) {
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (text.size() % 4 != 0) text.push_back('=');
  return Base64Decode(text);
}

std::string Rfc3339(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string LoginAgain(const OidcConfig& oidc) {
  return "log in again with your identity provider's login tool (such as kubelogin) to write a "
         "fresh id-token" +
         std::string(oidc.refresh_token.empty() ? " and a refresh-token" : "") + " into the " +
         oidc.origin;
}

}  // namespace

Result<OidcConfig> ParseOidcConfig(const std::map<std::string, std::string>& config,
                                   const std::string& origin) {
  auto value = [&](const char* key) {
    auto it = config.find(key);
    return it == config.end() ? std::string() : it->second;
  };
  OidcConfig oidc;
  oidc.origin = origin;
  oidc.issuer_url = value("idp-issuer-url");
  oidc.client_id = value("client-id");
  oidc.client_secret = value("client-secret");
  oidc.id_token = value("id-token");
  oidc.refresh_token = value("refresh-token");
  oidc.ca_file = value("idp-certificate-authority");
  if (std::string data = value("idp-certificate-authority-data"); !data.empty()) {
    std::optional<std::string> pem = Base64Decode(data);
    if (!pem) {
      return InvalidArgument(origin +
                             ": auth-provider oidc idp-certificate-authority-data is not valid "
                             "base64");
    }
    oidc.ca_pem = std::move(*pem);
  }
  if (oidc.issuer_url.empty()) {
    return InvalidArgument(origin + ": auth-provider oidc must provide idp-issuer-url");
  }
  if (oidc.client_id.empty()) {
    return InvalidArgument(origin + ": auth-provider oidc must provide client-id");
  }
  return oidc;
}

Result<std::string> OidcIdToken(const OidcConfig& oidc, std::chrono::system_clock::time_point now) {
  if (oidc.id_token.empty()) {
    return FailedPrecondition(oidc.origin + ": auth-provider oidc has no id-token; " +
                              LoginAgain(oidc));
  }
  std::vector<std::string> parts = Split(oidc.id_token, '.', /*skip_empty=*/false);
  if (parts.size() != 3) {
    return InvalidArgument(oidc.origin +
                           ": auth-provider oidc id-token is not a JWT (three base64url parts "
                           "separated by dots)");
  }
  std::optional<std::string> payload = DecodeBase64Url(parts[1]);
  nlohmann::json claims = payload
                              ? nlohmann::json::parse(*payload, nullptr, /*allow_exceptions=*/false)
                              : nlohmann::json();
  if (!claims.is_object()) {
    return InvalidArgument(oidc.origin +
                           ": auth-provider oidc id-token's payload is not base64url JSON");
  }
  // A token without exp is expired, as client-go reads it (its zero time is long past).
  const nlohmann::json exp = claims.value("exp", nlohmann::json());
  if (!exp.is_number()) {
    return FailedPrecondition(oidc.origin + ": auth-provider oidc id-token has no exp claim; " +
                              LoginAgain(oidc));
  }
  const auto exp_seconds = static_cast<int64_t>(std::floor(exp.get<double>()));
  const auto expiry = std::chrono::system_clock::time_point(std::chrono::seconds(exp_seconds));
  if (!(now + kExpiryDelta < expiry)) {
    return FailedPrecondition(oidc.origin + ": auth-provider oidc id-token expired at " +
                              Rfc3339(exp_seconds) + "; " + LoginAgain(oidc));
  }
  return oidc.id_token;
}

}  // namespace tessera::kube
