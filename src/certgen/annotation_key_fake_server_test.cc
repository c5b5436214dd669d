// certgen against the fake API server: the annotation key's Secret is made once, with a key the
// parts accept, and never replaced, neither by later runs nor when the installer made it.
#include <gtest/gtest.h>

#include "annotations/key_ring.h"
#include "certgen/annotation_key.h"
#include "certgen/certgen_command.h"
#include "common/strings.h"
#include "kube/fake_server_for_test.h"
#include "kube/resource.h"

namespace tessera::certgen {
namespace {

using kube::Json;

class AnnotationKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = kube::StartFakeServer();
    ASSERT_NE(server_, nullptr);
    client_ = kube::ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
    options_.ns = "default";
    options_.webhook_configuration = "";  // the fake serves no webhook configurations
    options_.bundle.server_hosts = {"tessera-scheduler"};
    options_.bundle.extender_client = "tessera-kube-scheduler";
  }

  Status Run() { return Generate(*client_, options_, std::chrono::system_clock::now()); }

  // The key text in the Secret, "" when it does not exist.
  std::string Key(const std::string& name = "tessera-annotation-key") {
    Result<Json> secret = client_->Get(kube::kSecrets, "default", name);
    if (!secret.ok()) return "";
    return Base64Decode((*secret)["data"].value("key", "")).value_or("<not base64>");
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  Options options_;
};

TEST_F(AnnotationKeyTest, TheFirstRunMakesAKeyThePartsAccept) {
  ASSERT_TRUE(Run().ok());
  std::string key = Key();
  Result<annotations::KeyRing> ring = annotations::KeyRing::Parse(key, "the Secret");
  ASSERT_TRUE(ring.ok()) << ring.status().message() << "\n" << key;
  EXPECT_EQ(ring->key_ids().size(), 1u);
  EXPECT_EQ(Base64Decode(Split(key, '\n', false)[0])->size(), 32u);
  Result<Json> secret = client_->Get(kube::kSecrets, "default", "tessera-annotation-key");
  EXPECT_EQ(secret->at("metadata").at("labels").value("app.kubernetes.io/part-of", ""), "tessera");
}

TEST_F(AnnotationKeyTest, LaterRunsKeepTheKey) {
  ASSERT_TRUE(Run().ok());
  std::string first = Key();
  ASSERT_NE(first, "");
  ASSERT_TRUE(Run().ok());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Key(), first);
}

TEST_F(AnnotationKeyTest, TheInstallersKeyIsKept) {
  const std::string mine = "bXkgb3duIGtleSBvZiB0aGlydHktdHdvIGJ5dGVzIC4uLg==\n";
  Json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "tessera-annotation-key"}, {"namespace", "default"}}},
                 {"data", {{"key", Base64Encode(mine)}}}};
  ASSERT_TRUE(client_->Create(kube::kSecrets, "default", secret).ok());
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Key(), mine);
}

TEST_F(AnnotationKeyTest, TheConfiguredNameIsMadeAndEmptyMakesNone) {
  options_.annotation_key_secret = "other-key";
  ASSERT_TRUE(Run().ok());
  EXPECT_NE(Key("other-key"), "");
  EXPECT_EQ(Key(), "");
  options_.annotation_key_secret = "";
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(Key(), "");
}

// Under cert-manager (the chart's webhook.certManager.enabled) certgen makes only the key.
TEST_F(AnnotationKeyTest, WithoutCertificatesOnlyTheKeyIsMade) {
  options_.certificates = false;
  ASSERT_TRUE(Run().ok());
  EXPECT_NE(Key(), "");
  EXPECT_FALSE(client_->Get(kube::kSecrets, "default", options_.server_secret).ok());
  options_.certificates = true;
  ASSERT_TRUE(Run().ok());
  EXPECT_TRUE(client_->Get(kube::kSecrets, "default", options_.server_secret).ok());
}

TEST_F(AnnotationKeyTest, EachKeyIsNew) {
  Result<std::string> a = NewAnnotationKey(), b = NewAnnotationKey();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace tessera::certgen
