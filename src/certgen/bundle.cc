#include "certgen/bundle.h"

#include <algorithm>

#include "common/strings.h"

namespace tessera::certgen {

namespace {

// The serving certificate's common name: the first of its names.
std::string ServerName(const BundleSpec& spec) {
  return spec.server_hosts.empty() ? "tessera-scheduler" : spec.server_hosts.front();
}

}  // namespace

Result<Bundle> MakeBundle(const BundleSpec& spec) {
  ASSIGN_OR_RETURN(Authority ca, Authority::Create("tessera-ca", spec.validity));
  Bundle b;
  b.ca = ca.cert_pem();
  ASSIGN_OR_RETURN(b.server, ca.Issue({.common_name = ServerName(spec),
                                       .hosts = spec.server_hosts,
                                       .usage = Usage::kServer}));
  ASSIGN_OR_RETURN(b.extender_client,
                   ca.Issue({.common_name = spec.extender_client, .usage = Usage::kClient}));
  if (!spec.webhook_client.empty()) {
    ASSIGN_OR_RETURN(b.webhook_client,
                     ca.Issue({.common_name = spec.webhook_client, .usage = Usage::kClient}));
  }
  return b;
}

namespace {

// Why one certificate of the bundle cannot be kept ("" when it can).
std::string WhyRenewOne(const std::string& what, const KeyPair& pair, const std::string& ca,
                        const std::string& common_name, const std::vector<std::string>& hosts,
                        const BundleSpec& spec, std::chrono::system_clock::time_point now) {
  if (!IssuedWithKey(pair.cert_pem, pair.key_pem, ca)) {
    return "the " + what + " certificate is not signed by the CA or does not match its key";
  }
  Result<CertificateFacts> facts = ReadCertificate(pair.cert_pem);
  if (!facts.ok()) return "the " + what + " certificate: " + facts.status().message();
  if (facts->common_name != common_name) {
    return "the " + what + " certificate names " + facts->common_name + ", not " + common_name;
  }
  for (const std::string& host : hosts) {
    if (std::find(facts->hosts.begin(), facts->hosts.end(), host) == facts->hosts.end()) {
      return "the " + what + " certificate does not name " + host;
    }
  }
  if (facts->not_after - spec.renew_before < now) {
    return "the " + what + " certificate expires within the renewal window";
  }
  return "";
}

}  // namespace

std::string WhyRenew(const Bundle& existing, const BundleSpec& spec,
                     std::chrono::system_clock::time_point now) {
  std::string why = WhyRenewOne("serving", existing.server, existing.ca, ServerName(spec),
                                spec.server_hosts, spec, now);
  if (why.empty()) {
    why = WhyRenewOne("extender client", existing.extender_client, existing.ca,
                      spec.extender_client, {}, spec, now);
  }
  if (why.empty() && !spec.webhook_client.empty()) {
    why = existing.webhook_client ? WhyRenewOne("webhook client", *existing.webhook_client,
                                                existing.ca, spec.webhook_client, {}, spec, now)
                                  : "no webhook client certificate yet";
  }
  return why;
}

nlohmann::json SecretData(const std::string& ca, const KeyPair& pair) {
  return {{"ca", Base64Encode(ca)},
          {"cert", Base64Encode(pair.cert_pem)},
          {"key", Base64Encode(pair.key_pem)}};
}

std::optional<std::pair<std::string, KeyPair>> FromSecretData(const nlohmann::json& data) {
  std::optional<std::string> fields[3];
  const char* keys[3] = {"ca", "cert", "key"};
  for (int i = 0; i < 3; ++i) {
    if (!data.is_object() || !data.contains(keys[i]) || !data[keys[i]].is_string()) {
      return std::nullopt;
    }
    fields[i] = Base64Decode(data[keys[i]].get<std::string>());
    if (!fields[i]) return std::nullopt;
  }
  return std::make_pair(*fields[0], KeyPair{*fields[1], *fields[2]});
}

}  // namespace tessera::certgen
