#include "http/certificate_names.h"

#include <arpa/inet.h>
#include <openssl/x509v3.h>

namespace tessera::http {
namespace {

std::string Text(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

}  // namespace

CertificateNames NamesOf(X509* cert) {
  CertificateNames names;
  X509_NAME* subject = X509_get_subject_name(cert);
  int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) names.common_name = Text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn)));
  auto* alt =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; alt && i < sk_GENERAL_NAME_num(alt); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(alt, i);
    if (name->type == GEN_DNS) {
      names.dns.push_back(Text(name->d.dNSName));
    } else if (name->type == GEN_IPADD) {
      int length = ASN1_STRING_length(name->d.iPAddress);
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(length == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(name->d.iPAddress), text,
                sizeof text);
      names.ips.emplace_back(text);
    }
  }
  if (alt) GENERAL_NAMES_free(alt);
  return names;
}

}  // namespace tessera::http
