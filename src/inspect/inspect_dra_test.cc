// `tessera inspect` shows DRA shares (ResourceClaims allocated by gpu.tessera.io) beside the
// device plugin's: per node and GPU, the claims' consumed memory and cores and the pods they are
// reserved for. Golden outputs in testdata/dra_*.golden (TESSERA_UPDATE_GOLDENS=1 rewrites them).
#include <gtest/gtest.h>

#include <sstream>

#include "annotations/inventory.h"
#include "config/loader.h"
#include "fakeapiserver/fake_api_server.h"
#include "inspect/golden_for_test.h"
#include "inspect/inspect_command.h"
#include "inspect/inspect_test_support.h"
#include "kube/client.h"
#include "kube/config_keys.h"
#include "scheduler/protocol.h"

namespace tessera::inspect {
namespace {

using kube::Json;

// One allocation result of a claim: a device of node `pool`, with its consumed capacity (null:
// none recorded).
Json Allocated(const std::string& pool, const std::string& device, const Json& consumed,
               const std::string& driver = "gpu.tessera.io") {
  Json r = {{"request", "gpu-0"}, {"driver", driver}, {"pool", pool}, {"device", device}};
  if (!consumed.is_null()) {
    r["shareID"] = "share-" + device;
    r["consumedCapacity"] = consumed;
  }
  return r;
}

class InspectDraTest : public FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(client_->Create(kube::kNamespaces, "", {{"metadata", {{"name", "team-a"}}}}).ok());

    // A DRA node (its inventory not serving the extender) and a device-plugin node.
    std::vector<scheduler::GpuInfo> gpus = {{"GPU-d0", 0, "NVIDIA H100", 81559, 132, 0, true},
                                            {"GPU-d1", 1, "NVIDIA H100", 81559, 132, 1, true}};
    AddNode("dra-1", annotations::InventoryToJson({/*serving=*/false, gpus}));
    AddNode("plugin-1",
            annotations::InventoryToJson({true, {{"GPU-p0", 0, "NVIDIA L4", 22491, 58, 0, true}}}));
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "vgpu"},
          {"namespace", "team-a"},
          {"annotations",
           {{"tessera.io/allocation",
             R"({"version":1,"node":"plugin-1","containers":[{"name":"main","mode":"hard",
                         "devices":[{"uuid":"GPU-p0","memoryMiB":2048,"cores":20}]}]})"}}}}},
        {"spec",
         {{"nodeName", "plugin-1"}, {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}},
        {"status", {{"phase", "Running"}}}};
    ASSERT_TRUE(client_->Create(kube::kPods, "team-a", pod).ok());

    // 4 GiB and 30% of GPU 0 for one pod; 2 GiB, no compute limit, for two pods sharing a claim;
    // all of GPU 1's memory (no consumed capacity recorded) for a claim not in use yet.
    Claim("train-main-gpu-x7k2q",
          {Allocated("dra-1", "gpu-0", {{"memory", "4Gi"}, {"cores", "30"}})}, {"train"});
    Claim("shared", {Allocated("dra-1", "gpu-0", {{"memory", "2147483648"}, {"cores", "0"}})},
          {"reader-a", "reader-b"});
    Claim("whole", {Allocated("dra-1", "gpu-1", nullptr)}, {});
    // A device the node's inventory does not list; another driver's claim; and a consumed
    // capacity that cannot be read (a warning).
    Claim("stray", {Allocated("dra-1", "gpu-7", {{"memory", "1Gi"}, {"cores", "10"}})}, {"stray"});
    Claim("nic", {Allocated("dra-1", "nic-0", nullptr, "nic.example.com")}, {"net"});
    Claim("garbled", {Allocated("dra-1", "gpu-1", {{"memory", "lots"}})}, {"garbled"});
    // Not allocated yet.
    ASSERT_TRUE(client_
                    ->Create(kube::kResourceClaims, "team-a",
                             {{"apiVersion", "resource.k8s.io/v1"},
                              {"kind", "ResourceClaim"},
                              {"metadata", {{"name", "waiting"}, {"namespace", "team-a"}}},
                              {"spec", Json::object()}})
                    .ok());
  }

  void AddNode(const std::string& name, const std::string& inventory) {
    Json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"annotations", {{"tessera.io/gpus", inventory}}}}}};
    ASSERT_TRUE(client_->Create(kube::kNodes, "", node).ok());
  }

  void Claim(const std::string& name, const std::vector<Json>& results,
             const std::vector<std::string>& pods) {
    Json reserved = Json::array();
    for (const std::string& p : pods) {
      reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
    }
    Json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", name}, {"namespace", "team-a"}}},
        {"spec", Json::object()},
        {"status",
         {{"allocation", {{"devices", {{"results", results}}}}}, {"reservedFor", reserved}}}};
    auto created = client_->Create(kube::kResourceClaims, "team-a", claim);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  std::string Inspect(std::vector<std::string> args) {
    config::Schema schema;
    config::AddCommonKeys(schema);
    kube::AddConfigKeys(schema);
    AddInspectKeys(schema);
    std::string kubeconfig =
        "apiVersion: v1\nkind: Config\nclusters: [{name: f, cluster: "
        "{server: \"" +
        server_->url() +
        "\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, "
        "context: {cluster: f, user: u}}]\ncurrent-context: c\n";
    args.insert(args.begin(), {"--kubeconfig", kubeconfig});
    Result<config::Loaded> loaded = config::Load(schema, args, {});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) return "";
    std::ostringstream out, err;
    EXPECT_EQ(RunInspect(loaded->config, loaded->positional, {}, false, out, err), 0) << err.str();
    return out.str();
  }
};

TEST_F(InspectDraTest, DetailsShowClaimsBesideDevicePluginPods) {
  std::string out = Inspect({"-d"});
  ExpectGolden("dra_details", out);
  // The claims' memory adds up on GPU 0 (4 GiB + 2 GiB), whose pods are the three reserved ones.
  EXPECT_NE(out.find("6144/81559"), std::string::npos) << out;
  EXPECT_NE(out.find("claim team-a/shared (DRA; pods team-a/reader-a, team-a/reader-b): 2048 MiB, "
                     "no compute limit"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("nic"), std::string::npos) << "another driver's claim is not Tessera's";
  // gpushare's view names the claims the same way.
  ExpectGolden("dra_gib_details", Inspect({"-o", "gib", "-d"}));
}

TEST_F(InspectDraTest, JsonMarksDraShares) {
  std::string out = Inspect({"-o", "json"});
  ExpectGolden("dra_json", out);
  Json doc = Json::parse(out);
  const Json& gpu0 = doc["nodes"][0]["gpus"][0];
  ASSERT_EQ(gpu0["pods"].size(), 2u);
  EXPECT_EQ(gpu0["pods"][0],
            Json::parse(R"({"claim":"team-a/shared","pods":["team-a/reader-a","team-a/reader-b"],
                            "memoryMiB":2048,"cores":0,"dra":true})"));
  // GPU 1: the whole memory of the claim without consumed capacity.
  EXPECT_EQ(doc["nodes"][0]["gpus"][1]["usedMiB"], 81559);
  // The pods: train, reader-a, reader-b, stray and the device plugin's vgpu.
  EXPECT_EQ(doc["totals"]["pods"], 5);
  EXPECT_EQ(doc["warnings"].size(), 1u);
  EXPECT_NE(doc["warnings"][0].get<std::string>().find("claim team-a/garbled: device gpu-1: "
                                                       "consumedCapacity memory: "),
            std::string::npos)
      << doc["warnings"];
}

}  // namespace
}  // namespace tessera::inspect
