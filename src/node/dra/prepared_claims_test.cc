#include "node/dra/prepared_claims.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/test_support.h"

namespace tessera::node::dra {
namespace {

using tessera::node::testing::TempDir;
using ::testing::HasSubstr;

PreparedClaim Claim(const std::string& uid, const std::string& mode = "hard") {
  return {
      {"ns", "name-" + uid, uid},
      {Grant{mode, {{"GPU-0", 8192, 30, mode == "elastic" ? 80 : 0}, {"GPU-1", 0, 0, 0}}},
       {{{"gpu-0"}, "n1", "gpu-0", std::string("s1")}, {{"gpu-1"}, "n1", "gpu-1", std::nullopt}}}};
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(PreparedClaimsTest, WhatIsPutIsLoadedByTheNextInstance) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  PreparedClaims first(path);
  ASSERT_TRUE(first.Load().ok());  // no file yet: empty
  EXPECT_TRUE(first.all().empty());
  ASSERT_TRUE(first.Put(Claim("u1")).ok());
  ASSERT_TRUE(first.Put(Claim("u2")).ok());
  ASSERT_TRUE(first.Put(Claim("u3", "elastic")).ok());
  PreparedClaim admin = Claim("u4");
  admin.grant.admin_access = true;
  ASSERT_TRUE(first.Put(admin).ok());
  ASSERT_TRUE(first.Remove("u2").ok());
  ASSERT_TRUE(first.Remove("unknown").ok());

  PreparedClaims second(path);
  ASSERT_TRUE(second.Load().ok());
  ASSERT_NE(second.Find("u1"), nullptr);
  EXPECT_EQ(*second.Find("u1"), Claim("u1"));
  EXPECT_EQ(second.Find("u2"), nullptr);
  ASSERT_NE(second.Find("u3"), nullptr);
  EXPECT_EQ(*second.Find("u3"), Claim("u3", "elastic"))
      << "an elastic claim stays elastic, with its ceiling, across a restart";
  ASSERT_NE(second.Find("u4"), nullptr);
  EXPECT_EQ(*second.Find("u4"), admin) << "administrative access stays without limits";
  EXPECT_FALSE(second.Find("u1")->grant.admin_access);
  EXPECT_TRUE(second.damage().empty());
}

// Two agents on one node (a rolling update): each reads again what the other wrote.
TEST(PreparedClaimsTest, RefreshReadsWhatAnotherWriterWrote) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  PreparedClaims old_agent(path), new_agent(path);
  ASSERT_TRUE(old_agent.Load().ok());
  ASSERT_TRUE(new_agent.Load().ok());
  ASSERT_TRUE(old_agent.Put(Claim("u1")).ok());
  ASSERT_TRUE(new_agent.Refresh().ok());
  ASSERT_NE(new_agent.Find("u1"), nullptr);
  ASSERT_TRUE(new_agent.Put(Claim("u2")).ok());
  ASSERT_TRUE(new_agent.Remove("u1").ok());
  ASSERT_TRUE(old_agent.Refresh().ok());
  EXPECT_EQ(old_agent.Find("u1"), nullptr);
  ASSERT_NE(old_agent.Find("u2"), nullptr);
  // A file another writer damaged is set aside, as at Load.
  { std::ofstream(path + ".tmp") << "{torn"; }
  std::filesystem::rename(path + ".tmp", path);
  ASSERT_TRUE(new_agent.Refresh().ok());
  EXPECT_THAT(new_agent.damage(), HasSubstr("not JSON"));
  EXPECT_TRUE(new_agent.all().empty());
}

// What agents wrote before the mode, the ceiling and the checksum were kept is still read (as
// hard: they did not keep it).
TEST(PreparedClaimsTest, AFileOfAnEarlierAgentIsRead) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  std::ofstream(path)
      << R"({"version": 1, "claims": [{"namespace": "ns", "name": "name-u1",)"
         R"( "uid": "u1", "gpus": [{"uuid": "GPU-0", "memoryMiB": 8192, "cores": 30},)"
         R"( {"uuid": "GPU-1", "memoryMiB": 0, "cores": 0}], "devices": [)"
         R"({"requests": ["gpu-0"], "pool": "n1", "device": "gpu-0", "shareID": "s1"},)"
         R"( {"requests": ["gpu-1"], "pool": "n1", "device": "gpu-1"}]}]})";
  PreparedClaims claims(path);
  ASSERT_TRUE(claims.Load().ok());
  EXPECT_TRUE(claims.damage().empty()) << claims.damage();
  ASSERT_NE(claims.Find("u1"), nullptr);
  EXPECT_EQ(*claims.Find("u1"), Claim("u1"));
}

// A damaged file does not stop the agent (it restarted into the same refusal before, a crash
// loop until someone deleted the file): it is set aside, the state is empty, and damage() says
// why (DraDriver then rebuilds the claims).
TEST(PreparedClaimsTest, ADamagedFileIsSetAsideAndSaysWhy) {
  TempDir dir;
  const std::string path = dir.path() + "/dra-claims.json";
  {
    PreparedClaims writer(path);
    ASSERT_TRUE(writer.Put(Claim("u1")).ok());
  }
  const std::string good = Read(path);
  std::string changed = good;
  changed.replace(changed.find("8192"), 4, "9192");
  struct Case {
    std::string text, damage;
  } cases[] = {
      {"", "it is empty"},
      {good.substr(0, good.size() / 2), "it is not JSON (torn?)"},
      {R"({"version": 2, "claims": []})", "it is not a prepared-claims file of version 1"},
      {R"({"version": 1})", "it has no list of claims"},
      {changed, "its checksum does not match its claims"},
      {R"({"version": 1, "claims": [{"uid": "u"}]})", "it is malformed"},
      {R"({"version": 1, "claims": [{"namespace": "n", "name": "c", "uid": "u", "mode": "soft",)"
       R"( "gpus": [], "devices": []}]})",
       "it is malformed: claim u: mode \"soft\""},
  };
  for (const Case& c : cases) {
    std::ofstream(path, std::ios::trunc) << c.text;
    PreparedClaims claims(path);
    ASSERT_TRUE(claims.Load().ok()) << c.damage;
    EXPECT_THAT(claims.damage(), HasSubstr(c.damage));
    EXPECT_TRUE(claims.all().empty()) << c.damage;
    EXPECT_FALSE(std::filesystem::exists(path)) << c.damage;
    EXPECT_EQ(Read(path + ".damaged"), c.text) << "set aside as it was";
  }
}

TEST(PreparedClaimsTest, AFailedWriteChangesNothing) {
  TempDir dir;
  PreparedClaims claims(dir.path() + "/missing-folder/dra-claims.json");
  EXPECT_FALSE(claims.Put(Claim("u1")).ok());
  EXPECT_EQ(claims.Find("u1"), nullptr);
}

}  // namespace
}  // namespace tessera::node::dra
