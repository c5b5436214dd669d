// Certificates for the Tessera scheduler's endpoints, made with OpenSSL (EC P-256, SHA-256).
//
// One CA per install signs the scheduler's serving certificate and the client certificates of
// its callers (the second kube-scheduler; optionally the API server's webhook client). The CA's
// key lives only in memory while certgen runs: nobody who can read the Secrets can mint a new
// client, and a renewal makes a new CA and new certificates together.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::certgen {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

enum class Usage { kServer, kClient };

struct LeafSpec {
  std::string common_name;
  std::vector<std::string> hosts;  // subjectAltNames: IP addresses as IP, the rest as DNS
  Usage usage = Usage::kServer;
};

class Authority {
 public:
  static Result<Authority> Create(const std::string& common_name, std::chrono::seconds validity);
  ~Authority();
  Authority(Authority&&) noexcept;
  Authority& operator=(Authority&&) noexcept;

  // A certificate and key for `spec`, valid as long as the CA.
  Result<KeyPair> Issue(const LeafSpec& spec) const;
  const std::string& cert_pem() const { return cert_pem_; }

 private:
  struct Keys;
  Authority(std::unique_ptr<Keys> keys, std::string cert_pem, std::chrono::seconds validity);

  std::unique_ptr<Keys> keys_;
  std::string cert_pem_;
  std::chrono::seconds validity_;
};

// What certgen checks of a certificate read back from a Secret.
struct CertificateFacts {
  std::string common_name;
  std::vector<std::string> hosts;  // DNS and IP subjectAltNames, as text
  std::chrono::system_clock::time_point not_after;
};
Result<CertificateFacts> ReadCertificate(const std::string& cert_pem);

// True when `cert_pem` is signed by the CA `ca_pem` and `key_pem` is its key.
bool IssuedWithKey(const std::string& cert_pem, const std::string& key_pem,
                   const std::string& ca_pem);

}  // namespace tessera::certgen
