#include "annotations/signing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "annotations/names.h"

namespace tessera::annotations {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kKey[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

Signing Keyed() {
  return Signing(KeyRing::Parse(kKey, "keys").value());
}

// A pod of `uid` carrying what `signing` writes for name=value.
json PodWith(const Signing& signing, const std::string& uid, const std::string& name,
             const std::string& value) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", uid}}}};
  for (const auto& [k, v] : signing.Signed(name, uid, value)) pod["metadata"]["annotations"][k] = v;
  return pod;
}

TEST(Signing, UnsignedModeWritesNoSignatureAndTrustsEverything) {
  Signing none;
  EXPECT_FALSE(none.enabled());
  auto written = none.Signed(kAllocation, "uid-1", "{}");
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0], (std::pair<std::string, std::string>{kAllocation, "{}"}));
  json pod = {{"metadata", {{"uid", "u"}, {"annotations", {{kAllocation, "forged"}}}}}};
  EXPECT_TRUE(none.Check(pod, kAllocation, "pod default/p").ok());
  Result<Signing> from_no_file = Signing::FromKeyFile("");
  ASSERT_TRUE(from_no_file.ok());
  EXPECT_FALSE(from_no_file->enabled());
}

TEST(Signing, WritesTheSignatureBesideTheValueAndVerifiesIt) {
  Signing signing = Keyed();
  json pod = PodWith(signing, "uid-1", kAllocation, R"({"version":1})");
  EXPECT_THAT(pod["metadata"]["annotations"][kAllocationSignature].get<std::string>(),
              ::testing::StartsWith("v1.630dcd29."));
  EXPECT_TRUE(signing.Check(pod, kAllocation, "pod default/p").ok());
}

TEST(Signing, MissingSignatureNamesTheWriterThatShouldHaveSignedIt) {
  Signing signing = Keyed();
  json pod = PodWith(Signing(), "uid-1", kAllocation, "{}");
  Status s = signing.Check(pod, kAllocation, "pod default/p");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "the tessera.io/allocation of pod default/p is not signed by the Tessera scheduler (no "
            "tessera.io/allocation-signature)");
  json node = {{"metadata", {{"name", "n"}, {"uid", "n-1"}, {"annotations", {{kGpus, "{}"}}}}}};
  EXPECT_EQ(signing.Check(node, kGpus, "node n").message(),
            "the tessera.io/gpus of node n is not signed by a Tessera node agent (no "
            "tessera.io/gpus-signature)");
}

TEST(Signing, ValuesCopiedToAnotherPodOrAnnotationOrRewrittenAreRefused) {
  Signing signing = Keyed();
  json original = PodWith(signing, "uid-1", kAllocation, R"({"version":1,"node":"a"})");

  json other_pod = original;
  other_pod["metadata"]["uid"] = "uid-2";
  EXPECT_THAT(signing.Check(other_pod, kAllocation, "pod default/p").message(),
              HasSubstr("the tessera.io/allocation of pod default/p does not verify: its "
                        "signature (key id 630dcd29) does not match"));

  json moved = original;
  auto& a = moved["metadata"]["annotations"];
  a[kAllocationFailed] = a[kAllocation];
  a[kAllocationFailedSignature] = a[kAllocationSignature];
  EXPECT_FALSE(signing.Check(moved, kAllocationFailed, "pod default/p").ok());

  json rewritten = original;
  rewritten["metadata"]["annotations"][kAllocation] = R"({"version":1,"node":"b"})";
  EXPECT_FALSE(signing.Check(rewritten, kAllocation, "pod default/p").ok());

  json no_uid = original;
  no_uid["metadata"].erase("uid");
  EXPECT_FALSE(signing.Check(no_uid, kAllocation, "pod default/p").ok());
}

TEST(Signing, RefusalsAreCountedByAnnotationAcrossCopies) {
  Signing signing = Keyed();
  Signing copy = signing;
  signing.Refused(kAllocation, "why", "what instead");
  copy.Refused(kAllocation, "why", "what instead");
  copy.Refused(kGpus, "why", "what instead");
  EXPECT_EQ(signing.RefusedCount(kAllocation), 2u);
  EXPECT_EQ(signing.RefusedCount(kAllocationFailed), 0u);
  std::string out;
  signing.RenderRefused(out, "tessera_x_unverified_annotations_total", {kAllocation, kGpus});
  EXPECT_EQ(out,
            "# HELP tessera_x_unverified_annotations_total annotation values refused because "
            "their signature is missing or does not verify\n"
            "# TYPE tessera_x_unverified_annotations_total counter\n"
            "tessera_x_unverified_annotations_total{annotation=\"tessera.io/allocation\"} 2\n"
            "tessera_x_unverified_annotations_total{annotation=\"tessera.io/gpus\"} 1\n");
}

}  // namespace
}  // namespace tessera::annotations
