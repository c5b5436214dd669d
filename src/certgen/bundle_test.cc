// The certificates certgen makes, checked with the openssl tool (an implementation other than
// the code that made them), and when a stored bundle is kept or made anew.
#include "certgen/bundle.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tessera::certgen {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using ::testing::Contains;
using ::testing::HasSubstr;

BundleSpec Spec() {
  return {
      .server_hosts = {"tessera-scheduler", "tessera-scheduler.tessera-system.svc", "127.0.0.1"},
      .extender_client = "tessera-kube-scheduler",
      .webhook_client = "kube-apiserver-webhook-client"};
}

class Certificates : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-certgen-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    Result<Bundle> made = MakeBundle(Spec());
    ASSERT_TRUE(made.ok()) << made.status().message();
    bundle_ = std::move(*made);
    Write("ca.crt", bundle_.ca);
    Write("server.crt", bundle_.server.cert_pem);
    Write("client.crt", bundle_.extender_client.cert_pem);
    Write("webhook.crt", bundle_.webhook_client->cert_pem);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // openssl verify's exit status for `cert` under `purpose`.
  int Verify(const std::string& cert, const std::string& purpose) {
    std::string command = "openssl verify -CAfile '" + (dir_ / "ca.crt").string() + "' -purpose " +
                          purpose + " '" + (dir_ / cert).string() + "' > /dev/null 2>&1";
    return std::system(command.c_str());
  }
  fs::path dir_;
  Bundle bundle_;
};

TEST_F(Certificates, ServingCertificateVerifiesForServersOnly) {
  EXPECT_EQ(Verify("server.crt", "sslserver"), 0);
  EXPECT_NE(Verify("server.crt", "sslclient"), 0);
}

TEST_F(Certificates, ClientCertificatesVerifyForClientsOnly) {
  for (const char* cert : {"client.crt", "webhook.crt"}) {
    EXPECT_EQ(Verify(cert, "sslclient"), 0) << cert;
    EXPECT_NE(Verify(cert, "sslserver"), 0) << cert;
  }
}

TEST_F(Certificates, NamesAndLifetimeAreTheSpecs) {
  Result<CertificateFacts> server = ReadCertificate(bundle_.server.cert_pem);
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_EQ(server->common_name, "tessera-scheduler");
  EXPECT_THAT(server->hosts, Contains("tessera-scheduler.tessera-system.svc"));
  EXPECT_THAT(server->hosts, Contains("127.0.0.1"));
  auto left = server->not_after - std::chrono::system_clock::now();
  EXPECT_GT(left, hours(24 * 365 * 10 - 48));
  EXPECT_LT(left, hours(24 * 365 * 10 + 48));
  Result<CertificateFacts> client = ReadCertificate(bundle_.extender_client.cert_pem);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->common_name, "tessera-kube-scheduler");
  EXPECT_TRUE(client->hosts.empty());
}

TEST_F(Certificates, ABundleThatFitsTheSpecIsKept) {
  EXPECT_EQ(WhyRenew(bundle_, Spec(), std::chrono::system_clock::now()), "");
}

TEST_F(Certificates, ABundleDueForRenewalIsMadeAnew) {
  auto not_after = ReadCertificate(bundle_.server.cert_pem)->not_after;
  EXPECT_THAT(WhyRenew(bundle_, Spec(), not_after - hours(24 * 10)),
              HasSubstr("serving certificate expires within the renewal window"));
  EXPECT_EQ(WhyRenew(bundle_, Spec(), not_after - hours(24 * 31)), "");
}

TEST_F(Certificates, ANewServiceNameMakesTheBundleAnew) {
  BundleSpec spec = Spec();
  spec.server_hosts.push_back("tessera.example.com");
  EXPECT_THAT(WhyRenew(bundle_, spec, std::chrono::system_clock::now()),
              HasSubstr("does not name tessera.example.com"));
}

TEST_F(Certificates, ACertificateOfAnotherCaOrKeyMakesTheBundleAnew) {
  Bundle other = *MakeBundle(Spec());
  Bundle mixed = bundle_;
  mixed.extender_client = other.extender_client;
  EXPECT_THAT(WhyRenew(mixed, Spec(), std::chrono::system_clock::now()),
              HasSubstr("extender client certificate is not signed by the CA"));
  mixed = bundle_;
  mixed.server.key_pem = other.server.key_pem;
  EXPECT_THAT(WhyRenew(mixed, Spec(), std::chrono::system_clock::now()),
              HasSubstr("does not match its key"));
}

TEST_F(Certificates, AWebhookClientAskedForLaterMakesTheBundleAnew) {
  Bundle without = bundle_;
  without.webhook_client.reset();
  BundleSpec spec = Spec();
  EXPECT_THAT(WhyRenew(without, spec, std::chrono::system_clock::now()),
              HasSubstr("no webhook client certificate"));
  spec.webhook_client = "";
  EXPECT_EQ(WhyRenew(without, spec, std::chrono::system_clock::now()), "");
}

TEST_F(Certificates, ARenamedClientMakesTheBundleAnew) {
  BundleSpec spec = Spec();
  spec.extender_client = "other-scheduler";
  EXPECT_THAT(WhyRenew(bundle_, spec, std::chrono::system_clock::now()),
              HasSubstr("names tessera-kube-scheduler, not other-scheduler"));
}

TEST(SecretData, RoundTripsAndRefusesMissingKeys) {
  KeyPair pair{"-----CERT-----\n", "-----KEY-----\n"};
  nlohmann::json data = SecretData("-----CA-----\n", pair);
  auto back = FromSecretData(data);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->first, "-----CA-----\n");
  EXPECT_EQ(back->second.cert_pem, pair.cert_pem);
  EXPECT_EQ(back->second.key_pem, pair.key_pem);
  data.erase("key");
  EXPECT_FALSE(FromSecretData(data).has_value());
  data = SecretData("ca", pair);
  data["cert"] = "not base64 !";
  EXPECT_FALSE(FromSecretData(data).has_value());
}

TEST(ReadCertificate, RefusesWhatIsNoCertificate) {
  EXPECT_FALSE(ReadCertificate("hello").ok());
}

}  // namespace
}  // namespace tessera::certgen
