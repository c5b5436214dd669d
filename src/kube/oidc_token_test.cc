// The oidc auth-provider's id-token: used while its exp is more than 10 s ahead, as client-go does;
// what an expired, missing or malformed token says.
#include "kube/oidc_token.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace tessera::kube {
namespace {

using Clock = std::chrono::system_clock;

// A JWT with `payload` (its signature is not checked by clients).
std::string Jwt(const std::string& payload) {
  auto url = [](std::string text) {
    text = Base64Encode(text);
    for (char& c : text) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!text.empty() && text.back() == '=') text.pop_back();
    return text;
  };
  return url(R"({"alg":"RS256"})") + "." + url(payload) + ".c2lnbmF0dXJl";
}

OidcConfig WithToken(const std::string& token) {
  return {.issuer_url = "https://idp",
          .client_id = "k8s",
          .id_token = token,
          .origin = "kubeconfig k user u"};
}

TEST(OidcTokenTest, AValidIdTokenIsTheBearerToken) {
  Clock::time_point now = Clock::from_time_t(1'700'000'000);
  std::string token = Jwt(R"({"iss":"https://idp","exp":1700003600,"sub":"ann~?"})");
  Result<std::string> sent = OidcIdToken(WithToken(token), now);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(*sent, token);
  // A fractional exp is read as client-go reads it.
  EXPECT_TRUE(OidcIdToken(WithToken(Jwt(R"({"exp":1700003600.5})")), now).ok());
}

TEST(OidcTokenTest, ExpiredWithinTenSecondsOfExp) {
  Clock::time_point now = Clock::from_time_t(1'700'000'000);
  EXPECT_TRUE(OidcIdToken(WithToken(Jwt(R"({"exp":1700000011})")), now).ok());
  Result<std::string> soon = OidcIdToken(WithToken(Jwt(R"({"exp":1700000010})")), now);
  EXPECT_EQ(soon.status().code(), StatusCode::kFailedPrecondition);
  Result<std::string> past = OidcIdToken(WithToken(Jwt(R"({"exp":1600000000})")), now);
  EXPECT_EQ(past.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(past.status().message().find(
                "kubeconfig k user u: auth-provider oidc id-token expired at 2020-09-13T12:26:40Z; "
                "log in again"),
            std::string::npos)
      << past.status().message();
  // Without a refresh-token the message says to get one too.
  EXPECT_NE(past.status().message().find("fresh id-token and a refresh-token into the kubeconfig"),
            std::string::npos)
      << past.status().message();
  // No exp: expired, as client-go reads it.
  EXPECT_EQ(OidcIdToken(WithToken(Jwt(R"({"sub":"ann"})")), now).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(OidcTokenTest, MissingOrMalformedTokens) {
  Clock::time_point now = Clock::now();
  Result<std::string> none = OidcIdToken(WithToken(""), now);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("has no id-token"), std::string::npos);
  EXPECT_NE(OidcIdToken(WithToken("opaque-token"), now).status().message().find("is not a JWT"),
            std::string::npos);
  EXPECT_NE(OidcIdToken(WithToken("a.%%%.c"), now).status().message().find("not base64url JSON"),
            std::string::npos);
}

TEST(OidcTokenTest, ConfigNeedsIssuerAndClientId) {
  Result<OidcConfig> oidc =
      ParseOidcConfig({{"idp-issuer-url", "https://idp"},
                       {"client-id", "k8s"},
                       {"id-token", "t"},
                       {"idp-certificate-authority-data", Base64Encode("CA PEM")}},
                      "here");
  ASSERT_TRUE(oidc.ok()) << oidc.status().ToString();
  EXPECT_EQ(oidc->id_token, "t");
  EXPECT_TRUE(oidc->refresh_token.empty());
  EXPECT_EQ(oidc->ca_pem, "CA PEM");
  EXPECT_NE(ParseOidcConfig({{"idp-issuer-url", "https://idp"},
                             {"client-id", "k8s"},
                             {"idp-certificate-authority-data", "***"}},
                            "here")
                .status()
                .message()
                .find("idp-certificate-authority-data is not valid base64"),
            std::string::npos);
  EXPECT_EQ(ParseOidcConfig({{"client-id", "k8s"}}, "here").status().message(),
            "here: auth-provider oidc must provide idp-issuer-url");
  EXPECT_EQ(ParseOidcConfig({{"idp-issuer-url", "https://idp"}}, "here").status().message(),
            "here: auth-provider oidc must provide client-id");
}

}  // namespace
}  // namespace tessera::kube
