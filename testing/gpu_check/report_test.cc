#include "report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace tessera::gpu_check {
namespace {

TEST(ReportTest, LineTable) {
  struct Case {
    Check check;
    std::string want;
  } cases[] = {
      {Check("share.hard30", Verdict::kPass).Add("share_percent", 29.8712).Add("kernels", 1200),
       "share.hard30                             PASS  share_percent=29.87 kernels=1200"},
      {Check("x", Verdict::kFail).Add("big", 123456.7).Add("small", 0.000123456),
       "x                                        FAIL  big=123457 small=0.0001235"},
      {Check("y", Verdict::kInfo).Add("reading", "two words").Add("clock", "CLOCK_REALTIME"),
       "y                                        INFO  reading=\"two words\" clock=CLOCK_REALTIME"},
      {Check("z", Verdict::kInfo), "z                                        INFO"},
      {Check("n", Verdict::kInfo).Add("nan", std::nan("")).Add("count", size_t{3}),
       "n                                        INFO  nan=nan count=3"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatLine(c.check), c.want);
}

TEST(ReportTest, JsonLineKeepsOrderAndFullValues) {
  Check c("nvml.sm_util.a", Verdict::kFail);
  c.Add("nvml_percent", 41.123456789).Add("periods", 5).Add("reading", "a b").Add("bad", NAN);
  EXPECT_EQ(JsonLine("nvml", c),
            "{\"mode\":\"nvml\",\"check\":\"nvml.sm_util.a\",\"status\":\"FAIL\",\"figures\":{"
            "\"nvml_percent\":41.123456789,\"periods\":5,\"reading\":\"a b\",\"bad\":null}}");
}

TEST(ReportTest, ReporterAppendsAndRemembersFailures) {
  char dir[] = "/tmp/gpu_check_report_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/out.json";
  Reporter r("spread", path);
  testing::internal::CaptureStdout();
  EXPECT_TRUE(r.Emit(Check("a", Verdict::kInfo).Add("v", 1)));
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.Emit(Check("b", Verdict::kFail)));
  EXPECT_TRUE(r.failed());
  std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("b                                        FAIL"), std::string::npos);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "{\"mode\":\"spread\",\"check\":\"a\",\"status\":\"INFO\",\"figures\":{\"v\":1}}\n"
            "{\"mode\":\"spread\",\"check\":\"b\",\"status\":\"FAIL\",\"figures\":{}}\n");
  unlink(path.c_str());
  rmdir(dir);

  Reporter nowhere("spread", "/nonexistent-dir/out.json");
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_FALSE(nowhere.Emit(Check("a", Verdict::kInfo)));
  testing::internal::GetCapturedStdout();
  EXPECT_NE(testing::internal::GetCapturedStderr().find("cannot append to /nonexistent-dir"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::gpu_check
