// The certificates of one install, as certgen keeps them in Secrets: the CA, the scheduler's
// serving certificate, the extender client's (the second kube-scheduler) and, when asked for,
// the API server's webhook client certificate. Each Secret holds keys `ca`, `cert` and `key`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "certgen/certificates.h"
#include "common/status.h"

namespace tessera::certgen {

struct BundleSpec {
  std::vector<std::string> server_hosts;  // the Service's DNS names, localhost, ...
  std::string extender_client;            // common name of kube-scheduler's certificate
  std::string webhook_client;             // "" = no webhook client certificate
  std::chrono::seconds validity{std::chrono::hours(24 * 365 * 10)};
  std::chrono::seconds renew_before{std::chrono::hours(24 * 30)};
};

struct Bundle {
  std::string ca;
  KeyPair server;
  KeyPair extender_client;
  std::optional<KeyPair> webhook_client;
};

// A new CA and every certificate of `spec`.
Result<Bundle> MakeBundle(const BundleSpec& spec);

// Why `existing` cannot be kept for `spec` at `now` ("" when it can): a certificate missing,
// not signed by the bundle's CA or not matching its key, issued for other names, or expiring
// within spec.renew_before.
std::string WhyRenew(const Bundle& existing, const BundleSpec& spec,
                     std::chrono::system_clock::time_point now);

// A Secret's data (base64 values of ca, cert, key), and back. nullopt when a key is missing or
// not base64.
nlohmann::json SecretData(const std::string& ca, const KeyPair& pair);
std::optional<std::pair<std::string, KeyPair>> FromSecretData(const nlohmann::json& data);

}  // namespace tessera::certgen
