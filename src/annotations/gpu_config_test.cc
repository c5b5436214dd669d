#include "annotations/gpu_config.h"

#include <gtest/gtest.h>

namespace tessera::annotations {
namespace {

using nlohmann::json;

TEST(GpuConfig, RoundTrips) {
  const GpuConfig cases[] = {{}, {ComputeMode::kElastic, 0}, {ComputeMode::kElastic, 80}};
  for (const GpuConfig& c : cases) {
    json p = GpuConfigToJson(c);
    Result<GpuConfig> back = ParseGpuConfig(p);
    ASSERT_TRUE(back.ok()) << p.dump() << ": " << back.status().message();
    EXPECT_EQ(*back, c) << p.dump();
  }
}

// What a user writes in a claim or a DeviceClass: the mode may be left out (hard).
TEST(GpuConfig, ReadsWhatUsersWrite) {
  Result<GpuConfig> c = ParseGpuConfig(json::parse(R"({"apiVersion":"gpu.tessera.io/v1",)"
                                                   R"("kind":"GpuConfig"})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c, GpuConfig{});
}

TEST(GpuConfig, ErrorsSayWhatIsAllowed) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {R"([1])", "its parameters are not an object"},
      {R"({"apiVersion":"gpu.tessera.io/v2","kind":"GpuConfig"})",
       "must have apiVersion gpu.tessera.io/v1 and kind GpuConfig, not \"gpu.tessera.io/v2\""},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"Other"})", "and kind GpuConfig"},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","computeMode":"soft"})",
       "computeMode \"soft\": expected \"hard\" or \"elastic\""},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","computeMode":1})",
       "computeMode 1: expected"},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","computeMode":"elastic",)"
       R"("coresLimit":0})",
       "coresLimit 0: expected a whole percent, 1 to 100"},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","computeMode":"elastic",)"
       R"("coresLimit":"80"})",
       "coresLimit \"80\""},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","coresLimit":80})",
       "coresLimit applies to computeMode elastic only"},
      {R"({"apiVersion":"gpu.tessera.io/v1","kind":"GpuConfig","memory":1})",
       "unknown field \"memory\" (a GpuConfig has apiVersion, kind, computeMode, coresLimit)"},
  };
  for (const Case& c : cases) {
    Result<GpuConfig> r = ParseGpuConfig(json::parse(c.text));
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace tessera::annotations
