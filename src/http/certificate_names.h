// The names a certificate carries: its subject's common name and its subjectAltNames. The
// scheduler's server matches client certificates against them; certgen checks the certificates
// it stored. Pure function; thread-safe.
#pragma once

#include <openssl/x509.h>

#include <string>
#include <vector>

namespace tessera::http {

struct CertificateNames {
  std::string common_name;       // "" when the subject has none
  std::vector<std::string> dns;  // DNS subjectAltNames, in order
  std::vector<std::string> ips;  // IP subjectAltNames, as text
};

CertificateNames NamesOf(X509* cert);

}  // namespace tessera::http
