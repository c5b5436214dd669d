// HTTPS with a client certificate against the fake API server, certificates made by openssl.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "kube/fake_server_for_test.h"
#include "kube/kubeconfig.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string d = dir_.path();
    // A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA.
    std::string script =
        "set -e; cd '" + d +
        "'\n"
        "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1; }\n"
        "key ca.key; key server.key; key client.key; key other.key\n"
        "openssl req -x509 -new -key ca.key -out ca.crt -days 1 -subj /CN=tessera-test-ca\n"
        "openssl req -x509 -new -key other.key -out other.crt -days 1 -subj /CN=other-ca\n"
        "openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1\n"
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext\n"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out server.crt -days 1 -extfile server.ext\n"
        "openssl req -new -key client.key -out client.csr -subj /CN=tessera-test-client\n"
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out client.crt -days 1\n";
    std::string script_path = dir_.Write("make-certs.sh", script);
    ASSERT_EQ(std::system(("bash '" + script_path + "' >/dev/null 2>&1").c_str()), 0)
        << "openssl failed";
    server_ = StartFakeServer(
        {.tls_cert = d + "/server.crt", .tls_key = d + "/server.key", .client_ca = d + "/ca.crt"});
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(StartsWith(server_->url(), "https://"));
  }
  std::string File(const std::string& name) { return dir_.path() + "/" + name; }
  Status ListNodes(const ConnectionConfig& connection) {
    auto client = Client::Create(connection, {.qps = 0, .timeout = std::chrono::seconds(10)});
    if (!client.ok()) return client.status();
    return (*client)->List(kNodes, {}).status();
  }

  TempDir dir_;
  std::unique_ptr<testing::FakeApiServer> server_;
};

TEST_F(TlsTest, ClientCertificateFromFiles) {
  Status status = ListNodes({.server = server_->url(),
                             .ca_file = File("ca.crt"),
                             .client_cert_file = File("client.crt"),
                             .client_key_file = File("client.key")});
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(TlsTest, ClientCertificateFromKubeconfigData) {
  std::string kubeconfig =
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
      "clusters:\n- name: k\n  cluster:\n    server: " +
      server_->url() +
      "\n    certificate-authority-data: " + Base64Encode(ReadFile(File("ca.crt"))) +
      "\nusers:\n- name: u\n  user:\n    client-certificate-data: " +
      Base64Encode(ReadFile(File("client.crt"))) +
      "\n    client-key-data: " + Base64Encode(ReadFile(File("client.key"))) + "\n";
  Result<ConnectionConfig> connection = ParseKubeconfig(kubeconfig, "", "test kubeconfig");
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  EXPECT_TRUE(connection->ca_file.empty());
  Status status = ListNodes(*connection);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(TlsTest, NoClientCertificateIsRefused) {
  Status status = ListNodes({.server = server_->url(), .ca_file = File("ca.crt")});
  EXPECT_FALSE(status.ok());
}

TEST_F(TlsTest, UntrustedServerIsRefusedUnlessVerificationIsSkipped) {
  ConnectionConfig connection{.server = server_->url(),
                              .ca_file = File("other.crt"),
                              .client_cert_file = File("client.crt"),
                              .client_key_file = File("client.key")};
  Status refused = ListNodes(connection);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  connection.ca_file.clear();
  connection.insecure_skip_tls_verify = true;
  Status skipped = ListNodes(connection);
  EXPECT_TRUE(skipped.ok()) << skipped.ToString();
}

}  // namespace
}  // namespace tessera::kube
