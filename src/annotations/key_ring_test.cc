#include "annotations/key_ring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera::annotations {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Bytes 0..31, and its key id (the first 8 hex digits of its SHA-256).
constexpr char kKey1[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr char kKey1Id[] = "630dcd29";
// 40 bytes of 0xff.
constexpr char kKey2[] = "/////////////////////////////////////////////////////w==";

KeyRing Ring(const std::string& text) {
  Result<KeyRing> ring = KeyRing::Parse(text, "/etc/keys");
  EXPECT_TRUE(ring.ok()) << ring.status().message();
  return std::move(ring).value();
}

std::string ParseError(const std::string& text) {
  Result<KeyRing> ring = KeyRing::Parse(text, "/etc/keys");
  EXPECT_FALSE(ring.ok());
  return ring.ok() ? "" : ring.status().message();
}

TEST(KeyRing, SignsWithHmacSha256OverNameUidAndValue) {
  KeyRing ring = Ring(std::string(kKey1) + "\n");
  EXPECT_EQ(ring.signing_key_id(), kKey1Id);
  // The known answer, from Python's hmac module over "tessera.io/allocation\nuid-1\n{...}".
  EXPECT_EQ(ring.Sign("tessera.io/allocation", "uid-1", R"({"version":1})"),
            "v1.630dcd29.EJm_3OqGHscu-9NmoR8n2awBcwFUO1clDsa2mka1itM");
  std::string signature = ring.Sign("tessera.io/gpus", "node-uid", "{}");
  EXPECT_THAT(signature, MatchesRegex("v1\\.630dcd29\\.[A-Za-z0-9_-]{43}"));
  EXPECT_TRUE(ring.Verify("tessera.io/gpus", "node-uid", "{}", signature).ok());
}

TEST(KeyRing, ASignatureIsWorthNothingOnAnotherObjectAnnotationOrValue) {
  KeyRing ring = Ring(kKey1);
  std::string signature = ring.Sign("tessera.io/allocation", "uid-1", "value");
  for (const auto& [name, uid, value] :
       {std::tuple{"tessera.io/allocation", "uid-2", "value"},
        std::tuple{"tessera.io/allocation-failed", "uid-1", "value"},
        std::tuple{"tessera.io/allocation", "uid-1", "value2"},
        std::tuple{"tessera.io/allocation", "uid-1\nvalue", ""}}) {
    Status s = ring.Verify(name, uid, value, signature);
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << name << " " << uid << " " << value;
    EXPECT_EQ(s.message(),
              "does not verify: its signature (key id 630dcd29) does not match; the value was "
              "changed, or signed for another object or annotation");
  }
  std::string tampered = signature;
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(ring.Verify("tessera.io/allocation", "uid-1", "value", tampered).ok());
}

TEST(KeyRing, RotationTheFirstKeySignsEveryKeyVerifies) {
  KeyRing old_ring = Ring(kKey1);
  KeyRing rolling = Ring(std::string("# new key first, old key until every part has the new\n") +
                         kKey2 + "\n" + kKey1 + "\n");
  EXPECT_EQ(rolling.key_ids().size(), 2u);
  EXPECT_NE(rolling.signing_key_id(), kKey1Id);
  std::string by_old = old_ring.Sign("tessera.io/gpus", "u", "v");
  std::string by_new = rolling.Sign("tessera.io/gpus", "u", "v");
  EXPECT_TRUE(rolling.Verify("tessera.io/gpus", "u", "v", by_old).ok());
  EXPECT_TRUE(rolling.Verify("tessera.io/gpus", "u", "v", by_new).ok());
  Status s = old_ring.Verify("tessera.io/gpus", "u", "v", by_new);
  EXPECT_EQ(s.message(), "does not verify: its signature is of key id " + rolling.signing_key_id() +
                             ", which the annotation key file does not hold (it holds 630dcd29)");
}

TEST(KeyRing, MalformedSignaturesAreRefused) {
  KeyRing ring = Ring(kKey1);
  std::string good = ring.Sign("a", "u", "v");
  for (std::string bad : {std::string(""), std::string("x"), "v2" + good.substr(2),
                          std::string("v1.630DCD29") + good.substr(11),
                          std::string("v1.630dcd2.abc"), std::string("v1.630dcd29."),
                          std::string("v1.630dcd29"), good + ".x", std::string(10000, 'v')}) {
    Status s = ring.Verify("a", "u", "v", bad);
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << bad;
    EXPECT_THAT(s.message(), HasSubstr("has a malformed signature \"")) << bad;
    EXPECT_THAT(s.message(), HasSubstr("(expected v1.<key id>.<HMAC>)")) << bad;
    EXPECT_LT(s.message().size(), 200u) << "a long signature is shortened in the message";
  }
}

TEST(KeyRing, KeyFileLinesBlankLinesAndCommentsAreIgnored) {
  KeyRing ring = Ring("\n# rotated 2026-11\r\n  " + std::string(kKey1) + "  \r\n\n" + kKey2);
  EXPECT_EQ(ring.key_ids().front(), kKey1Id);
  EXPECT_EQ(ring.key_ids().size(), 2u);
}

TEST(KeyRing, KeyFileErrorsNameTheFileTheLineAndWhatIsAllowed) {
  const std::string allowed =
      "each line holds one key, the base64 of at least 32 random bytes (openssl rand -base64 "
      "32); blank lines and lines starting with # are ignored";
  EXPECT_EQ(ParseError(""), "annotation key file /etc/keys holds no key; " + allowed);
  EXPECT_EQ(ParseError("# only a comment\n\n"),
            "annotation key file /etc/keys holds no key; " + allowed);
  EXPECT_EQ(ParseError(std::string(kKey1) + "\n\nnot-base64!\n"),
            "annotation key file /etc/keys line 3: not base64; " + allowed);
  EXPECT_EQ(
      ParseError("# short\nAAECAwQFBgcICQoLDA0ODw==\n"),
      "annotation key file /etc/keys line 2: the key is 16 bytes, shorter than 32; " + allowed);
  // The key itself is never echoed.
  EXPECT_THAT(ParseError("c2VjcmV0"), ::testing::Not(HasSubstr("c2VjcmV0")));
}

class KeyFileTest : public ::testing::Test {
 protected:
  KeyFileTest() { std::filesystem::create_directories(dir_); }
  ~KeyFileTest() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  const std::string dir_ = "/tmp/tessera-key-ring-test-" + std::to_string(::getpid());
};

TEST_F(KeyFileTest, LoadsAFileAndRefusesMissingUnreadableAndEmptyOnes) {
  Result<KeyRing> ring = KeyRing::Load(Write("key", std::string(kKey1) + "\n"));
  ASSERT_TRUE(ring.ok()) << ring.status().message();
  EXPECT_EQ(ring->signing_key_id(), kKey1Id);

  Result<KeyRing> missing = KeyRing::Load(dir_ + "/absent");
  EXPECT_EQ(missing.status().message(),
            "cannot read the annotation key file " + dir_ + "/absent: No such file or directory");
  Result<KeyRing> folder = KeyRing::Load(dir_);
  EXPECT_THAT(folder.status().message(),
              HasSubstr("annotation key file " + dir_ + " is not a regular file"));
  Result<KeyRing> empty = KeyRing::Load(Write("empty", ""));
  EXPECT_THAT(empty.status().message(), HasSubstr("/empty holds no key"));
  if (::geteuid() != 0) {  // root reads any file
    std::string locked = Write("locked", kKey1);
    ::chmod(locked.c_str(), 0);
    EXPECT_THAT(KeyRing::Load(locked).status().message(), HasSubstr("Permission denied"));
  }
}

}  // namespace
}  // namespace tessera::annotations
