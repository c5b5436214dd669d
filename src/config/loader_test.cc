#include "config/loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/strings.h"

namespace tessera::config {
namespace {

namespace fs = std::filesystem;

Schema TestSchema() {
  Schema s;
  AddCommonKeys(s);
  s.Add({.path = "node.device-split-count",
         .type = Type::kInt,
         .default_value = "10",
         .help = "slots per GPU",
         .min = 1,
         .max = 1000});
  s.Add({.path = "node.cdi", .type = Type::kBool, .default_value = "true", .help = "CDI"});
  s.Add({.path = "kube.kubeconfig",
         .type = Type::kString,
         .default_value = "",
         .help = "kubeconfig",
         .flags = {"kubeconfig"},
         .secret = false});
  s.Add({.path = "kube.timeout", .type = Type::kDuration, .default_value = "30s", .help = "t"});
  s.Add({.path = "scheduler.tls.cert", .type = Type::kString, .default_value = "", .help = "c"});
  s.Add({.path = "node.reserved-memory", .type = Type::kBytes, .default_value = "0", .help = "r"});
  s.Add({.path = "node.scaling", .type = Type::kFloat, .default_value = "1", .help = "s"});
  s.Add({.path = "inspect.nodes", .type = Type::kList, .default_value = "", .help = "n"});
  s.Add({.path = "inspect.details",
         .type = Type::kBool,
         .default_value = "false",
         .help = "d",
         .flags = {"d"}});
  return s;
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-config-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  Result<Loaded> LoadWith(std::vector<std::string> args, Environment env = {}) {
    return Load(schema_, args, env);
  }

  Schema schema_ = TestSchema();
  fs::path dir_;
};

TEST_F(LoaderTest, DefaultsWhenNothingIsGiven) {
  auto r = LoadWith({});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("log.level"), "info");
  EXPECT_EQ(r->config.GetInt("node.device-split-count"), 10);
  EXPECT_EQ(r->config.SourceOf("log.level").ToString(), "default");
}

TEST_F(LoaderTest, EachLayerOverridesTheOneBelow) {
  std::string file = Write("c.yaml",
                           "log:\n  level: warn\n  format: json\n"
                           "node:\n  device-split-count: 4\n  cdi: false\n");
  // File over default.
  auto r = LoadWith({"--config", file});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("log.level"), "warn");
  EXPECT_EQ(r->config.SourceOf("log.level").ToString(), "file " + file + ":2");
  EXPECT_EQ(r->config.GetInt("node.device-split-count"), 4);
  // Environment over file.
  r = LoadWith({"--config", file}, {{"TESSERA_LOG_LEVEL", "error"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("log.level"), "error");
  EXPECT_EQ(r->config.SourceOf("log.level").ToString(), "env TESSERA_LOG_LEVEL");
  EXPECT_EQ(r->config.GetString("log.format"), "json");  // untouched keys keep the file's value
  // Flag over environment.
  r = LoadWith({"--config=" + file, "--log.level=debug"}, {{"TESSERA_LOG_LEVEL", "error"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("log.level"), "debug");
  EXPECT_EQ(r->config.SourceOf("log.level").ToString(), "flag --log.level");
}

TEST_F(LoaderTest, NestedKeysFromTheEnvironmentNeedNoRegistration) {
  auto r = LoadWith({}, {{"TESSERA_NODE_DEVICE_SPLIT_COUNT", "7"},
                         {"TESSERA_SCHEDULER_TLS_CERT", "/etc/tls.crt"},
                         {"TESSERA_KUBE_TIMEOUT", "1m30s"},
                         {"TESSERA_NODE_RESERVED_MEMORY", "256Mi"},
                         {"TESSERA_INSPECT_NODES", "a, b"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetInt("node.device-split-count"), 7);
  EXPECT_EQ(r->config.GetString("scheduler.tls.cert"), "/etc/tls.crt");
  EXPECT_EQ(r->config.GetDuration("kube.timeout"), std::chrono::seconds(90));
  EXPECT_EQ(r->config.GetBytes("node.reserved-memory"), 256ULL << 20);
  EXPECT_EQ(r->config.GetList("inspect.nodes"), (std::vector<std::string>{"a", "b"}));
}

TEST_F(LoaderTest, Base64CarriesMultiLineStrings) {
  std::string kubeconfig = "apiVersion: v1\nkind: Config\n";
  auto r = LoadWith({}, {{"TESSERA_KUBE_KUBECONFIG_BASE64", Base64Encode(kubeconfig)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("kube.kubeconfig"), kubeconfig);
  EXPECT_EQ(r->config.SourceOf("kube.kubeconfig").ToString(), "env TESSERA_KUBE_KUBECONFIG_BASE64");
}

TEST_F(LoaderTest, Base64AndPlainTogetherIsAnError) {
  auto r = LoadWith({}, {{"TESSERA_KUBE_KUBECONFIG", "/x"},
                         {"TESSERA_KUBE_KUBECONFIG_BASE64", Base64Encode("y")}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "TESSERA_KUBE_KUBECONFIG and TESSERA_KUBE_KUBECONFIG_BASE64 are both set; set only one "
            "of them");
}

TEST_F(LoaderTest, Base64ErrorsNameTheVariable) {
  auto r = LoadWith({}, {{"TESSERA_KUBE_KUBECONFIG_BASE64", "not*base64"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "invalid value for kube.kubeconfig (env TESSERA_KUBE_KUBECONFIG_BASE64): expected "
            "base64 text (RFC 4648, with padding)");
  r = LoadWith({}, {{"TESSERA_NODE_DEVICE_SPLIT_COUNT_BASE64", Base64Encode("4")}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("base64 values are only for string keys"), std::string::npos);
}

TEST_F(LoaderTest, IllTypedValuesNameKeySourceAndExpectation) {
  auto r = LoadWith({}, {{"TESSERA_KUBE_TIMEOUT", "30"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "invalid value \"30\" for kube.timeout (env TESSERA_KUBE_TIMEOUT): expected a "
            "duration such as 500ms, 30s, 5m or 1h30m");

  std::string file = Write("c.toml", "[node]\n\"device-split-count\" = \"many\"\n");
  r = LoadWith({"--config", file});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "invalid value \"many\" for node.device-split-count (file " +
                                      file + ":2): expected a whole number");

  r = LoadWith({"--log.level", "loud"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "invalid value \"loud\" for log.level (flag --log.level): expected one of debug, "
            "info, warn, error");

  r = LoadWith({"--node.device-split-count=0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "invalid value \"0\" for node.device-split-count (flag --node.device-split-count): "
            "expected a value of at least 1");

  r = LoadWith({}, {{"TESSERA_NODE_RESERVED_MEMORY", "lots"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected a byte quantity such as 16Gi"), std::string::npos);
}

TEST_F(LoaderTest, UnknownNamesSuggestTheClosestKey) {
  auto r = LoadWith({}, {{"TESSERA_LOG_LEVL", "debug"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "unknown environment variable TESSERA_LOG_LEVL; did you mean TESSERA_LOG_LEVEL?");

  std::string file = Write("c.yaml", "node:\n  device-split-cont: 3\n");
  r = LoadWith({"--config", file});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown key node.device-split-cont in " + file +
                                      ":2; did you mean node.device-split-count?");

  r = LoadWith({"--kubeconfg", "x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown flag --kubeconfg; did you mean --kubeconfig?");
}

TEST_F(LoaderTest, LibraryVariablesAreNotErrors) {
  auto r = LoadWith({}, {{"TESSERA_LIMITS_FILE", "/x"},
                         {"TESSERA_CORE_MODE", "elastic"},
                         {"PATH", "/bin"},
                         {"CUDA_DEVICE_SM_LIMIT", "30"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
}

// What Kubernetes sets in Tessera's pods for the Service tessera-scheduler (found when deploy/
// first ran in a cluster: the parts refused to start).
TEST_F(LoaderTest, ServiceLinkVariablesAreNotErrors) {
  auto r = LoadWith({}, {{"TESSERA_SCHEDULER_SERVICE_HOST", "10.0.0.5"},
                         {"TESSERA_SCHEDULER_SERVICE_PORT", "8443"},
                         {"TESSERA_SCHEDULER_SERVICE_PORT_HTTPS", "8443"},
                         {"TESSERA_SCHEDULER_PORT", "tcp://10.0.0.5:8443"},
                         {"TESSERA_SCHEDULER_PORT_8443_TCP", "tcp://10.0.0.5:8443"},
                         {"TESSERA_SCHEDULER_PORT_8443_TCP_PROTO", "tcp"},
                         {"TESSERA_SCHEDULER_PORT_8443_TCP_PORT", "8443"},
                         {"TESSERA_SCHEDULER_PORT_8443_TCP_ADDR", "10.0.0.5"},
                         {"TESSERA_NODE_METRICS_SERVICE_HOST", "10.0.0.6"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = LoadWith({}, {{"TESSERA_SCHEDULER_PORT_HTTPS", "1"}});
  EXPECT_FALSE(r.ok()) << "not a service link: still an unknown name";
}

TEST_F(LoaderTest, AllErrorsAreReportedTogether) {
  auto r = LoadWith({}, {{"TESSERA_LOG_LEVL", "x"}, {"TESSERA_NODE_CDI", "perhaps"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Split(r.status().message(), '\n').size(), 2u);
}

TEST_F(LoaderTest, TomlAndYamlGiveTheSameResult) {
  std::string yaml = Write("c.yaml",
                           "log:\n  level: debug\nnode:\n  device-split-count: 5\n  cdi: false\n"
                           "  scaling: 1.5\n  reserved-memory: 512Mi\n"
                           "kube:\n  timeout: 45s\ninspect:\n  nodes: [n1, n2]\n");
  std::string toml = Write("c.toml",
                           "[log]\nlevel = \"debug\"\n[node]\ndevice-split-count = 5\ncdi = false\n"
                           "scaling = 1.5\nreserved-memory = \"512Mi\"\n"
                           "[kube]\ntimeout = \"45s\"\n[inspect]\nnodes = [\"n1\", \"n2\"]\n");
  auto a = LoadWith({"--config", yaml});
  auto b = LoadWith({"--config", toml});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (const KeySpec& k : schema_.keys()) {
    EXPECT_EQ(a->config.ValueText(k.path), b->config.ValueText(k.path)) << k.path;
  }
  EXPECT_EQ(a->config.GetInt("node.device-split-count"), 5);
  EXPECT_FALSE(b->config.GetBool("node.cdi"));
  EXPECT_DOUBLE_EQ(b->config.GetFloat("node.scaling"), 1.5);
  EXPECT_EQ(b->config.GetBytes("node.reserved-memory"), 512ULL << 20);
  EXPECT_EQ(b->config.GetList("inspect.nodes"), (std::vector<std::string>{"n1", "n2"}));
}

TEST_F(LoaderTest, DottedKeysInFilesEqualNestedOnes) {
  std::string file = Write("c.yaml", "node.device-split-count: 3\n");
  auto r = LoadWith({"--config", file});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetInt("node.device-split-count"), 3);
}

TEST_F(LoaderTest, FileSyntaxErrorsNameFileAndLine) {
  std::string file = Write("bad.yaml", "log:\n  level: [unclosed\n");
  auto r = LoadWith({"--config", file});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(), file + ":")) << r.status().message();
  r = LoadWith({"--config", Write("c.ini", "x=1")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must end in .yaml, .yml or .toml"), std::string::npos);
  r = LoadWith({"--config", (dir_ / "missing.yaml").string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot read config file"), std::string::npos);
}

TEST_F(LoaderTest, FlagsAliasesBoolsListsAndPositionals) {
  auto r = LoadWith({"node-1", "--kubeconfig", "/k", "-d", "--node.cdi=false", "--inspect.nodes",
                     "a,b", "--inspect.nodes=c", "--print-config", "--", "--literal"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.GetString("kube.kubeconfig"), "/k");
  EXPECT_EQ(r->config.SourceOf("kube.kubeconfig").ToString(), "flag --kubeconfig");
  EXPECT_TRUE(r->config.GetBool("inspect.details"));
  EXPECT_FALSE(r->config.GetBool("node.cdi"));
  EXPECT_EQ(r->config.GetList("inspect.nodes"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(r->print_config);
  EXPECT_EQ(r->positional, (std::vector<std::string>{"node-1", "--literal"}));
  r = LoadWith({"--kubeconfig"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "flag --kubeconfig needs a value");
}

TEST_F(LoaderTest, PrintShowsEveryKeyWithItsSource) {
  auto r = LoadWith({"--log.level", "debug"},
                    {{"TESSERA_KUBE_KUBECONFIG_BASE64", Base64Encode("a\nb\n")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string printed = r->config.Print({"log", "kube"});
  EXPECT_NE(printed.find("log.level"), std::string::npos);
  EXPECT_NE(printed.find("flag --log.level"), std::string::npos);
  EXPECT_NE(printed.find("<4 bytes, multi-line>"), std::string::npos);
  EXPECT_EQ(printed.find("node."), std::string::npos);
}

}  // namespace
}  // namespace tessera::config

namespace tessera::config {
namespace {

// Bounds on bytes and durations, non-empty strings and rules across keys: before, a bytes key
// with a minimum loaded 0 and an empty name loaded cleanly, and both broke at run time.
Schema BoundedSchema() {
  Schema s;
  s.Add({.path = "a.body", .type = Type::kBytes, .default_value = "4Mi", .help = "b", .min = 1024});
  s.Add({.path = "a.wait",
         .type = Type::kDuration,
         .default_value = "10s",
         .help = "w",
         .min = 0.001,
         .max = 60});
  s.Add({.path = "a.name",
         .type = Type::kString,
         .default_value = "x",
         .help = "n",
         .non_empty = true});
  s.Add({.path = "a.other", .type = Type::kString, .default_value = "y", .help = "o"});
  s.AddRule([](const Config& c) -> Status {
    if (c.GetString("a.name") == c.GetString("a.other")) {
      return InvalidArgument(c.Describe("a.name") + " and " + c.Describe("a.other") +
                             " must differ");
    }
    return Status::Ok();
  });
  return s;
}

std::string LoadError(const std::vector<std::string>& args, const Environment& env = {}) {
  Schema s = BoundedSchema();
  Result<Loaded> r = Load(s, args, env);
  return r.ok() ? "" : r.status().message();
}

TEST(LoaderBounds, BytesBelowTheMinimumAreRefusedNamingKeySourceAndBound) {
  EXPECT_EQ(LoadError({"--a.body=0"}),
            "invalid value \"0\" for a.body (flag --a.body): expected a value of at least 1Ki");
}

TEST(LoaderBounds, DurationsOutsideTheBoundsAreRefused) {
  EXPECT_EQ(
      LoadError({}, {{"TESSERA_A_WAIT", "0"}}),
      "invalid value \"0\" for a.wait (env TESSERA_A_WAIT): expected a value of at least 1ms");
  EXPECT_EQ(LoadError({"--a.wait=2m"}),
            "invalid value \"2m\" for a.wait (flag --a.wait): expected a value of at most 1m");
}

TEST(LoaderBounds, EmptyValueOfANonEmptyKeyIsRefused) {
  EXPECT_EQ(LoadError({"--a.name="}),
            "invalid value \"\" for a.name (flag --a.name): expected a non-empty value");
}

TEST(LoaderBounds, RulesAcrossKeysRunAfterLoading) {
  EXPECT_EQ(LoadError({"--a.other=x"}),
            "a.name \"x\" (default) and a.other \"x\" (flag --a.other) must differ");
  EXPECT_EQ(LoadError({}), "");
}

}  // namespace
}  // namespace tessera::config
