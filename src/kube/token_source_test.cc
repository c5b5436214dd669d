#include "kube/token_source.h"

#include <gtest/gtest.h>

#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

using Clock = TokenSource::Clock;

TEST(TokenSourceTest, FixedAndNone) {
  EXPECT_EQ(*TokenSource::Fixed("abc").Token(), "abc");
  EXPECT_EQ(*TokenSource().Token(), "");
}

TEST(TokenSourceTest, FileIsReReadAfterTheRefreshPeriod) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  TokenSource source = TokenSource::FromFile(path, std::chrono::minutes(1));
  Clock::time_point t0 = Clock::now();
  EXPECT_EQ(*source.TokenAt(t0), "first");
  dir.Write("token", "second");
  EXPECT_EQ(*source.TokenAt(t0 + std::chrono::seconds(30)), "first");  // cached
  EXPECT_EQ(*source.TokenAt(t0 + std::chrono::seconds(61)), "second");
}

TEST(TokenSourceTest, KeepsTheLastTokenWhenTheFileVanishes) {
  TempDir dir;
  std::string path = dir.Write("token", "kept");
  TokenSource source = TokenSource::FromFile(path, std::chrono::seconds(1));
  Clock::time_point t0 = Clock::now();
  EXPECT_EQ(*source.TokenAt(t0), "kept");
  std::filesystem::remove(path);
  EXPECT_EQ(*source.TokenAt(t0 + std::chrono::seconds(5)), "kept");
}

TEST(TokenSourceTest, MissingFileAtFirstReadIsAnError) {
  TempDir dir;
  TokenSource source = TokenSource::FromFile(dir.path() + "/none");
  Result<std::string> token = source.Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kNotFound);
  EXPECT_NE(token.status().message().find(dir.path() + "/none"), std::string::npos);
}

}  // namespace
}  // namespace tessera::kube
