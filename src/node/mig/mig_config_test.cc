// node.mig.*: parsing, the per-GPU setting, and the checks against a GPU's model.
#include "node/mig/mig_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/loader.h"
#include "node/config_keys.h"
#include "node/mig/mig_discovery.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;

GpuInfo Gpu(int index, const std::string& uuid, const std::string& model, bool capable) {
  GpuInfo g;
  g.index = index;
  g.uuid = uuid;
  g.model = model;
  g.mig.capable = capable;
  return g;
}

TEST(MigConfigTest, DefaultIsNoneEverywhere) {
  Result<MigConfig> c = ParseMigConfig("none", "", "");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->AnyMig());
  EXPECT_EQ(c->For(Gpu(0, "GPU-a", "NVIDIA H100 80GB HBM3", true)).mode, MigMode::kNone);
}

TEST(MigConfigTest, PerGpuSettingsTakeUuidThenIndexThenTheDefault) {
  Result<MigConfig> c = ParseMigConfig(
      "dynamic", "all-balanced", " 0=fixed:1g.10gb=2, 3g.40gb ; 1=fixed; GPU-b=none;2=DYNAMIC ;");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->AnyMig());
  const MigSetting& zero = c->For(Gpu(0, "GPU-z", "x", true));
  EXPECT_EQ(zero.mode, MigMode::kFixed);
  EXPECT_EQ(zero.layout, "1g.10gb=2, 3g.40gb");
  ASSERT_EQ(zero.spec.items.size(), 2u);
  EXPECT_EQ(zero.spec.items[0].count, 2);
  // fixed without its own layout takes node.mig.layout.
  EXPECT_EQ(c->For(Gpu(1, "GPU-y", "x", true)).layout, "all-balanced");
  EXPECT_EQ(c->For(Gpu(1, "GPU-b", "x", true)).mode, MigMode::kNone);  // the UUID wins
  EXPECT_EQ(c->For(Gpu(2, "GPU-x", "x", true)).mode, MigMode::kDynamic);
  EXPECT_EQ(c->For(Gpu(7, "GPU-w", "x", true)).mode, MigMode::kDynamic);
}

TEST(MigConfigTest, ErrorsSayWhatIsWrongAndWhatIsAllowed) {
  struct Case {
    const char *mode, *layout, *gpus, *message;
  } cases[] = {
      {"half", "", "", "node.mig.mode: MIG mode \"half\" is not one of none, fixed or dynamic"},
      {"fixed", "", "", "mode fixed needs a layout, for example all-balanced"},
      {"fixed", "all-big", "", "node.mig.layout"},
      {"none", "1g.10gb=", "", "node.mig.layout"},
      {"none", "", "0=fixed", "node.mig.gpus entry \"0=fixed\": mode fixed needs a layout"},
      {"none", "", "0=dynamic:1g.10gb", "a layout (\"1g.10gb\") is only for mode fixed"},
      {"none", "", "0", "expected GPU=MODE"},
      {"none", "", "gpu0=none", "\"gpu0\" names no GPU: give its NVML index"},
      {"none", "", "0=sometimes", "MIG mode \"sometimes\" is not one of none, fixed or dynamic"},
      {"none", "", "0=none;0=dynamic", "GPU 0 is named twice"},
      {"none", "", "0=fixed:3g.40gb@9", "node.mig.gpus entry"},
  };
  for (const Case& c : cases) {
    Result<MigConfig> r = ParseMigConfig(c.mode, c.layout, c.gpus);
    ASSERT_FALSE(r.ok()) << c.mode << " " << c.layout << " " << c.gpus;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
}

TEST(MigConfigTest, ChecksTheSettingAgainstTheGpusModel) {
  Result<MigConfig> c =
      ParseMigConfig("fixed", "1g.10gb=2,2g.20gb,3g.40gb", "1=fixed:2g.20gb=3,1g.10gb=2;2=none");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const GpuInfo h100 = Gpu(0, "GPU-a", "NVIDIA H100 80GB HBM3", true);
  Result<std::optional<mig::Layout>> layout = CheckMigSetting(c->For(h100), h100);
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  ASSERT_TRUE(layout->has_value());
  EXPECT_EQ((*layout)->ToString(), "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4");

  const GpuInfo crowded = Gpu(1, "GPU-b", "NVIDIA H100 80GB HBM3", true);
  Result<std::optional<mig::Layout>> over = CheckMigSetting(c->For(crowded), crowded);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(),
              HasSubstr("GPU 1 (GPU-b, NVIDIA H100 80GB HBM3): MIG layout \"2g.20gb=3,1g.10gb=2\" "
                        "does not fit NVIDIA H100 80GB HBM3: it needs 8 compute slices"));

  const GpuInfo t4 = Gpu(3, "GPU-t", "Tesla T4", false);
  Result<std::optional<mig::Layout>> no_mig = CheckMigSetting(c->For(t4), t4);
  ASSERT_FALSE(no_mig.ok());
  EXPECT_EQ(no_mig.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_mig.status().message(),
              HasSubstr("GPU 3 (GPU-t, Tesla T4): MIG mode fixed, but Tessera knows no MIG "
                        "profiles of this model"));
  // A MIG model whose driver does not answer the MIG calls.
  const GpuInfo old_driver = Gpu(4, "GPU-o", "NVIDIA A100-SXM4-40GB", false);
  EXPECT_THAT(CheckMigSetting(c->For(old_driver), old_driver).status().message(),
              HasSubstr("the driver does not support MIG on it"));
  // none is fine anywhere.
  const GpuInfo plain = Gpu(2, "GPU-p", "Tesla T4", false);
  EXPECT_TRUE(CheckMigSetting(c->For(plain), plain).ok());
}

TEST(MigConfigTest, GpusNamedButAbsentAreRefused) {
  Result<MigConfig> c = ParseMigConfig("none", "", "5=dynamic");
  ASSERT_TRUE(c.ok());
  Status s = CheckMigConfig(*c, {Gpu(0, "GPU-a", "NVIDIA H100 80GB HBM3", true)});
  EXPECT_THAT(s.message(), HasSubstr("node.mig.gpus names GPU 5, which is not on this node; its "
                                     "GPUs: 0 (GPU-a)"));
  c = ParseMigConfig("none", "", "GPU-zz=dynamic");
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(CheckMigConfig(*c, {Gpu(0, "GPU-a", "x", true)}).message(),
              HasSubstr("names GPU GPU-zz, which is not on this node"));
}

TEST(MigMinorsTest, ParsesTheDriversTableAndNamesTheCapabilityNodes) {
  Result<MigMinors> m = ParseMigMinors(
      "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu1/gi7/access 240\n"
      "gpu1/gi7/ci0/access 241\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(MigCapsPaths(*m, 1, 7, 0),
            (std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap240",
                                      "/dev/nvidia-caps/nvidia-cap241"}));
  EXPECT_TRUE(MigCapsPaths(*m, 1, 7, 1).empty());
  Result<MigMinors> bad = ParseMigMinors("config 1\ngpu0/gi0/access three\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("MIG minors line 2 \"gpu0/gi0/access three\""));
  EXPECT_EQ(ReadMigMinors("/nonexistent/mig-minors").status().code(), StatusCode::kNotFound);
}

TEST(MigConfigTest, KeysReachTheAgentsOptions) {
  config::Schema schema;
  AddConfigKeys(schema);
  Result<config::Loaded> loaded = config::Load(
      schema, {"--node.mig.gpus=1=fixed:3g.40gb=2;GPU-x=none", "--node.mig.minors-file=/tmp/m"},
      {{"TESSERA_NODE_MIG_MODE", "fixed"}, {"TESSERA_NODE_MIG_LAYOUT", "all-balanced"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Result<AgentOptions> o = OptionsFromConfig(loaded->config, "n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->mig.all.mode, MigMode::kFixed);
  EXPECT_EQ(o->mig.all.layout, "all-balanced");
  EXPECT_EQ(o->mig.by_index.at(1).layout, "3g.40gb=2");
  EXPECT_EQ(o->mig.by_uuid.at("GPU-x").mode, MigMode::kNone);
  EXPECT_EQ(o->mig.minors_file, "/tmp/m");
  // The mode key allows only the three modes; the rest is checked when the options are built.
  EXPECT_FALSE(config::Load(schema, {"--node.mig.mode=half"}, {}).ok());
  loaded = config::Load(schema, {"--node.mig.mode=fixed"}, {});
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(OptionsFromConfig(loaded->config, "n").status().message(),
              HasSubstr("mode fixed needs a layout"));
  // Without any key: none everywhere, as before.
  loaded = config::Load(schema, {}, {});
  ASSERT_TRUE(loaded.ok());
  o = OptionsFromConfig(loaded->config, "n");
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->mig.AnyMig());
}

}  // namespace
}  // namespace tessera::node
