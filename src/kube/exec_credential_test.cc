// Exec credential plugins against a small shell script as the plugin: what it is given (args,
// env, KUBERNETES_EXEC_INFO, stdin), what its answer becomes, when it runs again, and the errors.
#include "kube/exec_credential.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

using json = nlohmann::json;
using SystemClock = std::chrono::system_clock;

// The plugin: records its arguments, environment and stdin, counts its runs, and prints a token
// "tok-<run>" valid until $EXPIRES (or a certificate with CERT=1; exits $FAIL when set).
constexpr const char* kPlugin = R"(#!/bin/sh
dir=$(dirname "$0")
n=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))
echo $n > "$dir/runs"
echo "$*" > "$dir/args"
echo "$KUBERNETES_EXEC_INFO" > "$dir/info"
echo "$GREETING" > "$dir/greeting"
cat > "$dir/stdin"
[ -n "$FAIL" ] && exit "$FAIL"
if [ -n "$CERT" ]; then
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"clientCertificateData":"CERT %s","clientKeyData":"KEY"}}' "$API" "$n"
else
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"tok-%s","expirationTimestamp":"%s"}}' "$API" "$n" "$EXPIRES"
fi
)";

class ExecCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = dir_.Write("bin/plugin", kPlugin);
    chmod(plugin_.c_str(), 0755);
    config_.api_version = kExecApiV1;
    config_.command = plugin_;
    config_.args = {"get-token", "--cluster", "prod"};
    config_.env = {{"GREETING", "hello"}, {"API", kExecApiV1}, {"EXPIRES", "2030-01-02T03:04:05Z"}};
    config_.interactive_mode = "Never";
    config_.origin = "kubeconfig test user u";
  }
  std::string Read(const std::string& name) {
    std::string text = ReadFile(dir_.path() + "/bin/" + name);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  TempDir dir_;
  std::string plugin_;
  ExecConfig config_;
};

TEST_F(ExecCredentialTest, PluginGetsArgsEnvAndExecInfoAndItsTokenIsReturned) {
  config_.provide_cluster_info = true;
  config_.cluster = {{"server", "https://10.0.0.1:6443"}, {"certificate-authority-data", "Q0E="}};
  Result<ExecCredential> cred = RunExecPlugin(config_, /*stdin_is_terminal=*/false);
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->token, "tok-1");
  ASSERT_TRUE(cred->expires.has_value());
  EXPECT_EQ(SystemClock::to_time_t(*cred->expires), 1893553445);  // 2030-01-02T03:04:05Z
  EXPECT_EQ(Read("args"), "get-token --cluster prod");
  EXPECT_EQ(Read("greeting"), "hello");
  EXPECT_EQ(Read("stdin"), "");  // not interactive: /dev/null
  json info = json::parse(Read("info"));
  EXPECT_EQ(info["apiVersion"], kExecApiV1);
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://10.0.0.1:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], "Q0E=");

  config_.provide_cluster_info = false;
  ASSERT_TRUE(RunExecPlugin(config_, false).ok());
  EXPECT_FALSE(json::parse(Read("info"))["spec"].contains("cluster"));
}

TEST_F(ExecCredentialTest, TokenIsKeptUntilItExpires) {
  ExecCredentialSource source(config_);
  SystemClock::time_point expiry = SystemClock::from_time_t(1893553445);
  EXPECT_EQ(source.CurrentAt(expiry - std::chrono::hours(1))->token, "tok-1");
  EXPECT_EQ(source.CurrentAt(expiry - std::chrono::seconds(1))->token, "tok-1");
  EXPECT_EQ(Read("runs"), "1");
  EXPECT_EQ(source.CurrentAt(expiry + std::chrono::seconds(1))->token, "tok-2");
  EXPECT_EQ(Read("runs"), "2");
}

TEST_F(ExecCredentialTest, TokenWithoutExpiryIsKeptForGood) {
  config_.env.push_back({"EXPIRES", ""});
  ExecCredentialSource source(config_);
  EXPECT_EQ(source.Current()->token, "tok-1");
  EXPECT_EQ(source.CurrentAt(SystemClock::now() + std::chrono::hours(1000))->token, "tok-1");
}

TEST_F(ExecCredentialTest, ClientCertificateAndV1Beta1) {
  config_.api_version = kExecApiV1Beta1;
  config_.env = {{"API", kExecApiV1Beta1}, {"CERT", "1"}};
  Result<ExecCredential> cred = RunExecPlugin(config_, false);
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->client_cert_pem, "CERT 1");
  EXPECT_EQ(cred->client_key_pem, "KEY");
  EXPECT_TRUE(cred->token.empty());
  EXPECT_FALSE(cred->expires.has_value());
}

TEST_F(ExecCredentialTest, MissingCommandSaysHowToInstallIt) {
  config_.command = "tessera-no-such-credential-plugin";
  config_.install_hint = "Install it with: brew install no-such-plugin\n";
  Result<ExecCredential> cred = RunExecPlugin(config_, false);
  ASSERT_FALSE(cred.ok());
  EXPECT_EQ(cred.status().code(), StatusCode::kNotFound);
  EXPECT_NE(cred.status().message().find("tessera-no-such-credential-plugin"), std::string::npos);
  EXPECT_NE(cred.status().message().find("brew install no-such-plugin"), std::string::npos);
  EXPECT_NE(cred.status().message().find("kubeconfig test user u"), std::string::npos);
}

TEST_F(ExecCredentialTest, FailingPluginAndInteractiveModes) {
  config_.env.push_back({"FAIL", "3"});
  Result<ExecCredential> cred = RunExecPlugin(config_, false);
  EXPECT_EQ(cred.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(cred.status().message().find("exit code 3"), std::string::npos);

  config_.interactive_mode = "Always";
  cred = RunExecPlugin(config_, /*stdin_is_terminal=*/false);
  EXPECT_EQ(cred.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cred.status().message().find("not a terminal"), std::string::npos);
  EXPECT_EQ(Read("runs"), "1");  // not run
}

TEST(ParseExecCredentialTest, RefusesWhatKubectlRefuses) {
  auto error = [](const std::string& text) {
    Result<ExecCredential> cred = ParseExecCredential(text, kExecApiV1);
    EXPECT_FALSE(cred.ok()) << text;
    return cred.status().message();
  };
  const std::string head =
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential")";
  EXPECT_NE(error("not json").find("not a JSON ExecCredential"), std::string::npos);
  EXPECT_NE(error(R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",)"
                  R"("status":{"token":"t"}})")
                .find("configured for client.authentication.k8s.io/v1"),
            std::string::npos);
  EXPECT_NE(error(head + "}").find("has no status"), std::string::npos);
  EXPECT_NE(error(head + R"(,"status":{}})").find("neither a token nor"), std::string::npos);
  EXPECT_NE(error(head + R"(,"status":{"clientKeyData":"k"}})").find("only one of"),
            std::string::npos);
  EXPECT_NE(error(head + R"(,"status":{"token":"t","expirationTimestamp":"tomorrow"}})")
                .find("not an RFC 3339 time"),
            std::string::npos);
  Result<ExecCredential> offset = ParseExecCredential(
      head + R"(,"status":{"token":"t","expirationTimestamp":"2030-01-02T05:04:05.25+02:00"}})",
      kExecApiV1);
  ASSERT_TRUE(offset.ok()) << offset.status().ToString();
  EXPECT_EQ(SystemClock::to_time_t(*offset->expires), 1893553445);
}

}  // namespace
}  // namespace tessera::kube
