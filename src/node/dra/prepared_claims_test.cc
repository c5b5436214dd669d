#include "node/dra/prepared_claims.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/test_support.h"

namespace tessera::node::dra {
namespace {

using tessera::node::testing::TempDir;
using ::testing::HasSubstr;

PreparedClaim Claim(const std::string& uid) {
  return {
      {"ns", "name-" + uid, uid},
      {Grant{"hard", {{"GPU-0", 8192, 30, 0}, {"GPU-1", 0, 0, 0}}},
       {{{"gpu-0"}, "n1", "gpu-0", std::string("s1")}, {{"gpu-1"}, "n1", "gpu-1", std::nullopt}}}};
}

TEST(PreparedClaimsTest, WhatIsPutIsLoadedByTheNextInstance) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  PreparedClaims first(path);
  ASSERT_TRUE(first.Load().ok());  // no file yet: empty
  EXPECT_TRUE(first.all().empty());
  ASSERT_TRUE(first.Put(Claim("u1")).ok());
  ASSERT_TRUE(first.Put(Claim("u2")).ok());
  ASSERT_TRUE(first.Remove("u2").ok());
  ASSERT_TRUE(first.Remove("unknown").ok());

  PreparedClaims second(path);
  ASSERT_TRUE(second.Load().ok());
  ASSERT_NE(second.Find("u1"), nullptr);
  EXPECT_EQ(*second.Find("u1"), Claim("u1"));
  EXPECT_EQ(second.Find("u2"), nullptr);
}

TEST(PreparedClaimsTest, AMalformedFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  std::ofstream(path) << R"({"version": 1, "claims": [{"uid": "u"}]})";
  PreparedClaims claims(path);
  Status s = claims.Load();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(path + " is malformed"));
  std::ofstream(path) << "not json";
  EXPECT_THAT(claims.Load().message(), HasSubstr("is not a prepared-claims file of version 1"));
}

TEST(PreparedClaimsTest, AFailedWriteChangesNothing) {
  TempDir dir;
  PreparedClaims claims(dir.path() + "/missing-folder/dra-claims.json");
  EXPECT_FALSE(claims.Put(Claim("u1")).ok());
  EXPECT_EQ(claims.Find("u1"), nullptr);
}

}  // namespace
}  // namespace tessera::node::dra
