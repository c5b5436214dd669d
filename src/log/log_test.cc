#include "log/log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tessera::log {
namespace {

TEST(Log, TextLineQuotesValuesWithSpaces) {
  std::string line = FormatLine(Format::kText, Level::kWarn, "T", "bind failed",
                                {{"pod", "ns/p"}, {"reason", "no fit"}});
  EXPECT_EQ(line, "T WARN bind failed pod=ns/p reason=\"no fit\"\n");
}

TEST(Log, JsonLineIsOneObject) {
  std::string line = FormatLine(Format::kJson, Level::kInfo, "T", "hi", {{"k", "v\n"}});
  ASSERT_EQ(line.back(), '\n');
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "hi");
  EXPECT_EQ(j["k"], "v\n");
}

TEST(Log, ParseRejectsUnknownNames) {
  EXPECT_EQ(*ParseLevel("debug"), Level::kDebug);
  EXPECT_FALSE(ParseLevel("verbose").ok());
  EXPECT_NE(ParseLevel("verbose").status().message().find("debug, info, warn, error"),
            std::string::npos);
  EXPECT_FALSE(ParseFormat("xml").ok());
}

TEST(Log, LevelFiltersLowerLevels) {
  Configure(Level::kWarn, Format::kText);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kError));
  Configure(Level::kInfo, Format::kText);
}

}  // namespace
}  // namespace tessera::log
