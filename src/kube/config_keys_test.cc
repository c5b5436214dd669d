#include "kube/config_keys.h"

#include <gtest/gtest.h>

#include "common/strings.h"
#include "config/loader.h"

namespace tessera::kube {
namespace {

config::Schema KubeSchema() {
  config::Schema schema;
  config::AddCommonKeys(schema);
  AddConfigKeys(schema);
  return schema;
}

TEST(ConfigKeysTest, DefaultsGiveTheDocumentedOptions) {
  config::Schema schema = KubeSchema();
  config::Config config(schema);
  ClientOptions options = ClientOptionsFromConfig(config);
  EXPECT_EQ(options.qps, 50);
  EXPECT_EQ(options.burst, 100);
  EXPECT_EQ(options.timeout, std::chrono::seconds(30));
  EXPECT_EQ(config.GetString("kube.kubeconfig"), "");
}

TEST(ConfigKeysTest, FlagsAndEnvironmentReachTheClient) {
  config::Schema schema = KubeSchema();
  std::string kubeconfig =
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
      "clusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:1'}\n";
  Result<config::Loaded> loaded = config::Load(
      schema, {"--kube.qps=5", "--kube.timeout", "2s"},
      {{"TESSERA_KUBE_KUBECONFIG_BASE64", Base64Encode(kubeconfig)}, {"TESSERA_KUBE_BURST", "7"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ClientOptions options = ClientOptionsFromConfig(loaded->config);
  EXPECT_EQ(options.qps, 5);
  EXPECT_EQ(options.burst, 7);
  EXPECT_EQ(options.timeout, std::chrono::seconds(2));
  Result<std::unique_ptr<Client>> client = ClientFromConfig(loaded->config, {});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->transport().server(), "http://127.0.0.1:1");
}

TEST(ConfigKeysTest, KubeconfigFlagAlias) {
  config::Schema schema = KubeSchema();
  Result<config::Loaded> loaded = config::Load(schema, {"--kubeconfig", "/x/config"}, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->config.GetString("kube.kubeconfig"), "/x/config");
  Result<std::unique_ptr<Client>> client = ClientFromConfig(loaded->config, {});
  EXPECT_EQ(client.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::kube
