#include "common/metric_labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(MetricLabelsTest, GpuLabelsAreDcgmExportersNames) {
  EXPECT_EQ(GpuLabels("node-a", 3, "GPU-8f3c", "NVIDIA H200"),
            R"(node="node-a",Hostname="node-a",gpu="3",UUID="GPU-8f3c",modelName="NVIDIA H200")");
}

TEST(MetricLabelsTest, ValuesAreEscapedAndAnUnknownIndexIsEmpty) {
  EXPECT_EQ(GpuLabels("n\"1", -1, "GPU-\\", "a\nb"),
            R"(node="n\"1",Hostname="n\"1",gpu="",UUID="GPU-\\",modelName="a\nb")");
}

TEST(MetricLabelsTest, BuildInfoNamesTheComponentAndVersion) {
  std::string out;
  RenderBuildInfo(out, "scheduler");
  EXPECT_THAT(out, HasSubstr("# TYPE tessera_build_info gauge\n"));
  EXPECT_THAT(out, HasSubstr("tessera_build_info{component=\"scheduler\",version=\"" +
                             std::string(TesseraVersion()) + "\"} 1\n"));
  EXPECT_FALSE(TesseraVersion().empty());
}

}  // namespace
}  // namespace tessera
