#include "certgen/certificates.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <utility>

#include "common/strings.h"
#include "http/certificate_names.h"

namespace tessera::certgen {
namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* c) const { X509_free(c); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;
using Cert = std::unique_ptr<X509, X509Deleter>;
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;

// Certificates may be used from an hour before they were made: clocks of a cluster differ.
constexpr long kBackdate = 3600;

std::string Drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return Drain(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return Drain(bio.get());
}

Cert ParseCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Key ParseKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A certificate for `subject_key` named `common_name`, signed by `issuer` (itself when null)
// with `issuer_key`, carrying `extensions` (OpenSSL's config syntax, by NID).
Result<Cert> Make(const std::string& common_name, EVP_PKEY* subject_key, X509* issuer,
                  EVP_PKEY* issuer_key, std::chrono::seconds validity,
                  const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  if (!cert) return Internal("cannot allocate a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Internal("no random bytes for a serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdate);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.count()));
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), subject_key);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) return InvalidArgument("cannot make the extension " + value);
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return Internal("cannot sign the certificate of " + common_name);
  }
  return cert;
}

}  // namespace

struct Authority::Keys {
  Key key;
  Cert cert;
};

Authority::Authority(std::unique_ptr<Keys> keys, std::string cert_pem,
                     std::chrono::seconds validity)
    : keys_(std::move(keys)), cert_pem_(std::move(cert_pem)), validity_(validity) {}
Authority::~Authority() = default;
Authority::Authority(Authority&&) noexcept = default;
Authority& Authority::operator=(Authority&&) noexcept = default;

Result<Authority> Authority::Create(const std::string& common_name, std::chrono::seconds validity) {
  auto keys = std::make_unique<Keys>();
  keys->key.reset(EVP_EC_gen("P-256"));
  if (!keys->key) return Internal("cannot make an EC P-256 key");
  ASSIGN_OR_RETURN(keys->cert,
                   Make(common_name, keys->key.get(), nullptr, keys->key.get(), validity,
                        {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                         {NID_key_usage, "critical,keyCertSign,cRLSign"},
                         {NID_subject_key_identifier, "hash"}}));
  std::string pem = CertPem(keys->cert.get());
  return Authority(std::move(keys), std::move(pem), validity);
}

Result<KeyPair> Authority::Issue(const LeafSpec& spec) const {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return Internal("cannot make an EC P-256 key");
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, spec.usage == Usage::kServer ? "serverAuth" : "clientAuth"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  std::vector<std::string> alt;
  for (const std::string& host : spec.hosts) alt.push_back((IsIp(host) ? "IP:" : "DNS:") + host);
  if (!alt.empty()) extensions.push_back({NID_subject_alt_name, Join(alt, ",")});
  ASSIGN_OR_RETURN(Cert cert, Make(spec.common_name, key.get(), keys_->cert.get(), keys_->key.get(),
                                   validity_, extensions));
  return KeyPair{CertPem(cert.get()), KeyPem(key.get())};
}

Result<CertificateFacts> ReadCertificate(const std::string& cert_pem) {
  Cert cert = ParseCert(cert_pem);
  if (!cert) return InvalidArgument("not a PEM certificate");
  http::CertificateNames names = http::NamesOf(cert.get());
  CertificateFacts facts{.common_name = std::move(names.common_name),
                         .hosts = std::move(names.dns)};
  facts.hosts.insert(facts.hosts.end(), names.ips.begin(), names.ips.end());
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1) {
    return InvalidArgument("the certificate's notAfter cannot be read");
  }
  facts.not_after = std::chrono::system_clock::from_time_t(timegm(&tm));
  return facts;
}

bool IssuedWithKey(const std::string& cert_pem, const std::string& key_pem,
                   const std::string& ca_pem) {
  Cert cert = ParseCert(cert_pem);
  Cert ca = ParseCert(ca_pem);
  Key key = ParseKey(key_pem);
  if (!cert || !ca || !key) return false;
  return X509_check_issued(ca.get(), cert.get()) == X509_V_OK &&
         X509_verify(cert.get(), X509_get0_pubkey(ca.get())) == 1 &&
         X509_check_private_key(cert.get(), key.get()) == 1;
}

}  // namespace tessera::certgen
