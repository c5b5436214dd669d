// The DRA plugin end to end on its real unix sockets: a fake kubelet calls Registration, DRAPlugin
// and DRAResourceHealth over gRPC, and the claims come from the fake API server.
#include "node/dra/dra_plugin.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "dra_health_v1alpha1.grpc.pb.h"
#include "dra_v1.grpc.pb.h"
#include "kube/fake_server_for_test.h"
#include "node/dra/claim_source.h"
#include "node/dra/dra_service.h"
#include "node/test_support.h"
#include "pluginregistration_v1.grpc.pb.h"

namespace tessera::node::dra {
namespace {

using nlohmann::json;
using tessera::node::testing::TempDir;
using tessera::node::testing::TestGpus;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace regpb = ::pluginregistration;
namespace healthpb = ::v1alpha1;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What kubelet does with the plugin's sockets.
class FakeKubelet {
 public:
  FakeKubelet(const std::string& registration_socket, const std::string& service_socket)
      : registration_(regpb::Registration::NewStub(grpc::CreateChannel(
            "unix:" + registration_socket, grpc::InsecureChannelCredentials()))),
        service_channel_(
            grpc::CreateChannel("unix:" + service_socket, grpc::InsecureChannelCredentials())),
        dra_(drapb::DRAPlugin::NewStub(service_channel_)),
        health_(healthpb::DRAResourceHealth::NewStub(service_channel_)) {}

  grpc::Status GetInfo(regpb::PluginInfo* info) {
    grpc::ClientContext ctx;
    Deadline(ctx);
    return registration_->GetInfo(&ctx, regpb::InfoRequest(), info);
  }
  grpc::Status Notify(bool registered, const std::string& error) {
    grpc::ClientContext ctx;
    Deadline(ctx);
    regpb::RegistrationStatus status;
    status.set_plugin_registered(registered);
    status.set_error(error);
    regpb::RegistrationStatusResponse out;
    return registration_->NotifyRegistrationStatus(&ctx, status, &out);
  }
  drapb::NodePrepareResourcesResponse Prepare(const std::vector<ClaimRef>& claims) {
    drapb::NodePrepareResourcesRequest req;
    for (const ClaimRef& c : claims) Add(req.add_claims(), c);
    grpc::ClientContext ctx;
    Deadline(ctx);
    drapb::NodePrepareResourcesResponse out;
    grpc::Status s = dra_->NodePrepareResources(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }
  drapb::NodeUnprepareResourcesResponse Unprepare(const std::vector<ClaimRef>& claims) {
    drapb::NodeUnprepareResourcesRequest req;
    for (const ClaimRef& c : claims) Add(req.add_claims(), c);
    grpc::ClientContext ctx;
    Deadline(ctx);
    drapb::NodeUnprepareResourcesResponse out;
    grpc::Status s = dra_->NodeUnprepareResources(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }
  healthpb::DRAResourceHealth::Stub& health() { return *health_; }

 private:
  static void Deadline(grpc::ClientContext& ctx) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }
  static void Add(drapb::Claim* out, const ClaimRef& c) {
    out->set_namespace_(c.ns);
    out->set_name(c.name);
    out->set_uid(c.uid);
  }
  std::unique_ptr<regpb::Registration::Stub> registration_;
  std::shared_ptr<grpc::Channel> service_channel_;
  std::unique_ptr<drapb::DRAPlugin::Stub> dra_;
  std::unique_ptr<healthpb::DRAResourceHealth::Stub> health_;
};

class DraPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = kube::StartFakeServer();
    ASSERT_NE(server_, nullptr);
    client_ = kube::ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
    source_ = std::make_unique<KubeClaimSource>(*client_);
    board_.Set(TestGpus(2));  // 80 GiB each, /dev/nvidia0 and /dev/nvidia1
    StartPlugin();
  }
  void TearDown() override { StopPlugin(); }

  void StartPlugin() {
    driver_ =
        std::make_unique<DraDriver>(DraOptions{.node_name = "node-a",
                                               .state_dir = dir_.path() + "/state",
                                               .cdi_dir = dir_.path() + "/cdi",
                                               .library_path = "/opt/tessera/libtessera-cuda.so"},
                                    *source_, board_);
    plugin_ = std::make_unique<DraPlugin>(
        DraPluginOptions{.kubelet_dir = dir_.path() + "/kubelet",
                         .pool = "node-a",
                         .socket_check = std::chrono::milliseconds(50),
                         .health_resend = std::chrono::milliseconds(300)},
        *driver_, board_);
    Status s = plugin_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    kubelet_ =
        std::make_unique<FakeKubelet>(plugin_->RegistrationSocket(), plugin_->ServiceSocket());
  }
  void StopPlugin() {
    kubelet_.reset();
    if (plugin_) plugin_->Stop();
    plugin_.reset();
    driver_.reset();
  }

  // Creates ResourceClaim `name` allocated with `results` ({device, memory, cores, pool}; an empty
  // memory is an exclusive allocation without consumedCapacity); returns its reference.
  struct Alloc {
    std::string device;
    std::string memory, cores;
    std::string pool = "node-a";
    bool admin_access = false;
    std::string request;  // empty: gpu-<i>
  };
  ClaimRef CreateClaim(const std::string& name, const std::vector<Alloc>& allocs) {
    json results = json::array();
    for (size_t i = 0; i < allocs.size(); ++i) {
      const Alloc& a = allocs[i];
      json r = {{"request", a.request.empty() ? "gpu-" + std::to_string(i) : a.request},
                {"driver", "gpu.tessera.io"},
                {"pool", a.pool},
                {"device", a.device}};
      if (!a.memory.empty()) {
        r["shareID"] = "5f0c1a2b-0000-4000-8000-00000000000" + std::to_string(i);
        r["consumedCapacity"] = {{"memory", a.memory}, {"cores", a.cores}};
      }
      if (a.admin_access) r["adminAccess"] = true;
      results.push_back(r);
    }
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", "default"}}},
                  {"spec", {{"devices", {{"requests", json::array()}}}}},
                  {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
    auto created = client_->Create(kube::kResourceClaims, "default", claim);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return {"default", name, created.ok() ? (*created)["metadata"].value("uid", "") : ""};
  }

  // A plugin instance of its own on the fixture's folders, with `instance_uid`.
  struct Instance {
    std::unique_ptr<DraDriver> driver;
    std::unique_ptr<DraPlugin> plugin;
    std::unique_ptr<FakeKubelet> kubelet;
  };
  Instance StartInstance(const std::string& instance_uid) {
    Instance out;
    out.driver = std::make_unique<DraDriver>(DraOptions{.node_name = "node-a",
                                                        .state_dir = dir_.path() + "/state",
                                                        .cdi_dir = dir_.path() + "/cdi"},
                                             *source_, board_);
    out.plugin =
        std::make_unique<DraPlugin>(DraPluginOptions{.kubelet_dir = dir_.path() + "/kubelet",
                                                     .pool = "node-a",
                                                     .instance_uid = instance_uid,
                                                     .socket_check = std::chrono::milliseconds(50)},
                                    *out.driver, board_);
    Status s = out.plugin->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    out.kubelet = std::make_unique<FakeKubelet>(out.plugin->RegistrationSocket(),
                                                out.plugin->ServiceSocket());
    return out;
  }

  std::string Limits(const ClaimRef& c) {
    return ReadFile(driver_->AllocationDir(c.uid) + "/limits");
  }
  json CdiSpec(const ClaimRef& c) { return json::parse(ReadFile(driver_->CdiSpecPath(c.uid))); }

  TempDir dir_;
  std::unique_ptr<tessera::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<KubeClaimSource> source_;
  DeviceBoard board_;
  std::unique_ptr<DraDriver> driver_;
  std::unique_ptr<DraPlugin> plugin_;
  std::unique_ptr<FakeKubelet> kubelet_;
};

TEST_F(DraPluginTest, RegistersAsTheDraPluginOfGpuTesseraIo) {
  EXPECT_EQ(plugin_->RegistrationSocket(),
            dir_.path() + "/kubelet/plugins_registry/gpu.tessera.io-reg.sock");
  EXPECT_EQ(plugin_->ServiceSocket(), dir_.path() + "/kubelet/plugins/gpu.tessera.io/dra.sock");
  regpb::PluginInfo info;
  ASSERT_TRUE(kubelet_->GetInfo(&info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.tessera.io");
  EXPECT_EQ(info.endpoint(), plugin_->ServiceSocket());
  // As the dynamic-resource-allocation helper lists them: the DRAPlugin and the health service.
  EXPECT_THAT(info.supported_versions(), ElementsAre("v1.DRAPlugin", "v1alpha1.DRAResourceHealth"));
  EXPECT_FALSE(plugin_->Registered());
  ASSERT_TRUE(kubelet_->Notify(true, "").ok());
  EXPECT_TRUE(plugin_->Registered());
  ASSERT_TRUE(kubelet_->Notify(false, "version mismatch").ok());
  EXPECT_FALSE(plugin_->Registered());
}

TEST_F(DraPluginTest, SharedClaimGetsItsLimitsAndACdiSpecWithTheGpusDeviceNode) {
  ClaimRef c = CreateClaim("shared", {{"gpu-1", "8Gi", "30"}});
  auto out = kubelet_->Prepare({c});
  ASSERT_EQ(out.claims().count(c.uid), 1u);
  const auto& answer = out.claims().at(c.uid);
  EXPECT_EQ(answer.error(), "");
  ASSERT_EQ(answer.devices_size(), 1);
  EXPECT_THAT(answer.devices(0).request_names(), ElementsAre("gpu-0"));
  EXPECT_EQ(answer.devices(0).pool_name(), "node-a");
  EXPECT_EQ(answer.devices(0).device_name(), "gpu-1");
  EXPECT_THAT(answer.devices(0).cdi_device_ids(),
              ElementsAre("tessera.io/claim=" + c.uid + "-gpu-1"));
  EXPECT_EQ(answer.devices(0).share_id(), "5f0c1a2b-0000-4000-8000-000000000000");

  std::string limits = Limits(c);
  EXPECT_THAT(limits, HasSubstr("devices=1\nuuid.0=GPU-1\nmemory.0=8589934592\ncores.0=30\n"));
  EXPECT_THAT(limits, HasSubstr("region=/var/run/tessera-region/region\n"));
  EXPECT_TRUE(fs::is_directory(driver_->RegionDir(c.uid)));

  EXPECT_EQ(driver_->CdiSpecPath(c.uid), dir_.path() + "/cdi/tessera.io-claim-" + c.uid + ".json");
  json spec = CdiSpec(c);
  EXPECT_EQ(spec["kind"], "tessera.io/claim");
  ASSERT_EQ(spec["devices"].size(), 2u);  // the GPU's, and the one of earlier agents
  EXPECT_EQ(spec["devices"][0]["name"], c.uid + "-gpu-1");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            json::array({{{"path", "/dev/nvidia1"}}}));
  const json& edits = spec["containerEdits"];
  EXPECT_EQ(edits["deviceNodes"].size(), 3u);  // nvidiactl, nvidia-uvm(-tools)
  std::map<std::string, json> mounts;
  for (const json& m : edits["mounts"]) mounts[m["containerPath"].get<std::string>()] = m;
  EXPECT_EQ(mounts["/var/run/tessera"]["hostPath"], driver_->AllocationDir(c.uid));
  EXPECT_EQ(mounts["/var/run/tessera"]["options"][0], "ro");
  EXPECT_EQ(mounts["/var/run/tessera-region"]["hostPath"], driver_->RegionDir(c.uid));
  EXPECT_EQ(mounts["/var/run/tessera-region"]["options"][0], "rw");
  EXPECT_EQ(mounts["/usr/local/lib/tessera/libtessera-cuda.so"]["hostPath"],
            "/opt/tessera/libtessera-cuda.so");
  EXPECT_EQ(mounts["/etc/ld.so.preload"]["hostPath"], dir_.path() + "/state/ld.so.preload");
  EXPECT_EQ(ReadFile(dir_.path() + "/state/ld.so.preload"),
            "/usr/local/lib/tessera/libtessera-cuda.so\n");
}

// The device nodes a container gets that names `requests` of the claim (none: the whole claim):
// kubelet passes it the CDI IDs of the answer's devices whose request names it names
// (pkg/kubelet/cm/dra, cdiDevicesAsList), and the runtime applies the spec's own edits once and
// each device's (tags.cncf.io/container-device-interface, InjectDevices).
std::set<std::string> ContainerNodes(const drapb::NodePrepareResourceResponse& answer,
                                     const json& spec, const std::vector<std::string>& requests) {
  std::vector<std::string> ids;
  for (const std::string& r : requests.empty() ? std::vector<std::string>{""} : requests) {
    for (const drapb::Device& d : answer.devices()) {
      const auto& names = d.request_names();
      if (r.empty() || std::find(names.begin(), names.end(), r) != names.end()) {
        ids.insert(ids.end(), d.cdi_device_ids().begin(), d.cdi_device_ids().end());
      }
    }
  }
  std::set<std::string> nodes;
  const std::string kind = spec["kind"].get<std::string>() + "=";
  for (const std::string& id : ids) {
    EXPECT_EQ(id.rfind(kind, 0), 0u) << id;
    auto device = std::find_if(spec["devices"].begin(), spec["devices"].end(), [&](const json& d) {
      return kind + d["name"].get<std::string>() == id;
    });
    EXPECT_NE(device, spec["devices"].end()) << id << " is not in the spec";
    if (device == spec["devices"].end()) continue;
    for (const json& n : (*device)["containerEdits"]["deviceNodes"]) nodes.insert(n["path"]);
  }
  if (!ids.empty() && spec.contains("containerEdits")) {
    for (const json& n : spec["containerEdits"]["deviceNodes"]) nodes.insert(n["path"]);
  }
  return nodes;
}

// A claim of two requests used by containers that name one each: each sees its own GPU only.
TEST_F(DraPluginTest, AContainerGetsTheGpusOfTheRequestsItNamesOnly) {
  ClaimRef c = CreateClaim("two", {{"gpu-0", "2Gi", "20", "node-a", false, "small"},
                                   {"gpu-1", "3Gi", "40", "node-a", false, "large"}});
  auto out = kubelet_->Prepare({c});
  const auto& answer = out.claims().at(c.uid);
  ASSERT_EQ(answer.error(), "");
  ASSERT_EQ(answer.devices_size(), 2);
  // kubelet names a device's health in the pod's status by its first CDI ID, one entry per ID.
  EXPECT_NE(answer.devices(0).cdi_device_ids(0), answer.devices(1).cdi_device_ids(0));
  const json spec = CdiSpec(c);
  auto with_controls = [](std::set<std::string> gpus) {
    gpus.insert({"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"});
    return gpus;
  };
  EXPECT_EQ(ContainerNodes(answer, spec, {"small"}), with_controls({"/dev/nvidia0"}));
  EXPECT_EQ(ContainerNodes(answer, spec, {"large"}), with_controls({"/dev/nvidia1"}));
  EXPECT_EQ(ContainerNodes(answer, spec, {"small", "large"}),
            with_controls({"/dev/nvidia0", "/dev/nvidia1"}));
  EXPECT_EQ(ContainerNodes(answer, spec, {}), with_controls({"/dev/nvidia0", "/dev/nvidia1"}));
  // One limits file, each GPU's limit found by its UUID: the container that sees GPU-0 alone is
  // held to its request's 2 GiB and 20%, whichever requests its neighbours name.
  EXPECT_THAT(Limits(c), HasSubstr("devices=2\nuuid.0=GPU-0\nmemory.0=2147483648\ncores.0=20\n"
                                   "uuid.1=GPU-1\nmemory.1=3221225472\ncores.1=40\n"));
}

// A pod of an agent before 2026-12 keeps the ID it got then (kubelet prepares it again only after
// its own restart): the spec still has that device, with all the claim's GPUs.
TEST_F(DraPluginTest, TheIdEarlierAgentsAnsweredStillResolves) {
  ClaimRef c = CreateClaim("earlier", {{"gpu-0", "2Gi", "20"}, {"gpu-1", "3Gi", "40"}});
  ASSERT_EQ(kubelet_->Prepare({c}).claims().at(c.uid).error(), "");
  drapb::NodePrepareResourceResponse earlier;
  for (const char* device : {"gpu-0", "gpu-1"}) {
    drapb::Device* d = earlier.add_devices();
    d->set_device_name(device);
    d->add_cdi_device_ids("tessera.io/claim=" + c.uid);
  }
  EXPECT_EQ(ContainerNodes(earlier, CdiSpec(c), {}),
            std::set<std::string>({"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl",
                                   "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}));
}

TEST_F(DraPluginTest, TwoClaimsOnOneGpuHaveTheirOwnLimits) {
  ClaimRef a = CreateClaim("a", {{"gpu-0", "8Gi", "30"}});
  ClaimRef b = CreateClaim("b", {{"gpu-0", "16Gi", "50"}});
  auto out = kubelet_->Prepare({a, b});
  ASSERT_EQ(out.claims_size(), 2);
  EXPECT_EQ(out.claims().at(a.uid).error(), "");
  EXPECT_EQ(out.claims().at(b.uid).error(), "");
  EXPECT_THAT(Limits(a), HasSubstr("uuid.0=GPU-0\nmemory.0=8589934592\ncores.0=30\n"));
  EXPECT_THAT(Limits(b), HasSubstr("uuid.0=GPU-0\nmemory.0=17179869184\ncores.0=50\n"));
  EXPECT_NE(driver_->RegionDir(a.uid), driver_->RegionDir(b.uid));
  EXPECT_EQ(CdiSpec(a)["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia0");
  EXPECT_EQ(CdiSpec(b)["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia0");
}

TEST_F(DraPluginTest, AnExclusiveAllocationGetsTheWholeGpu) {
  ClaimRef c = CreateClaim("whole", {{"gpu-1", "", ""}});
  auto out = kubelet_->Prepare({c});
  EXPECT_EQ(out.claims().at(c.uid).error(), "");
  EXPECT_FALSE(out.claims().at(c.uid).devices(0).has_share_id());
  EXPECT_THAT(Limits(c), HasSubstr("uuid.0=GPU-1\nmemory.0=0\ncores.0=0\n"));
}

// A monitoring pod's claim with adminAccess, on a GPU a tenant holds: the GPU's device nodes and
// nothing else (no library, no limits, no region), so NVML shows it the whole GPU.
TEST_F(DraPluginTest, AnAdminAccessClaimGetsTheDeviceNodesWithoutTheLibrary) {
  ClaimRef tenant = CreateClaim("tenant", {{"gpu-1", "8Gi", "30"}});
  ClaimRef monitor = CreateClaim("monitor", {{"gpu-1", "", "", "node-a", true}});
  auto out = kubelet_->Prepare({tenant, monitor});
  EXPECT_EQ(out.claims().at(tenant.uid).error(), "");
  ASSERT_EQ(out.claims().at(monitor.uid).error(), "");
  EXPECT_THAT(out.claims().at(monitor.uid).devices(0).cdi_device_ids(),
              ElementsAre("tessera.io/claim=" + monitor.uid + "-gpu-1"));
  const json spec = CdiSpec(monitor);
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia1");
  EXPECT_FALSE(spec["containerEdits"].contains("mounts")) << spec.dump();
  EXPECT_FALSE(fs::exists(driver_->AllocationDir(monitor.uid) + "/limits"));
  EXPECT_FALSE(fs::exists(driver_->RegionDir(monitor.uid)));
  EXPECT_THAT(Limits(tenant), HasSubstr("uuid.0=GPU-1\nmemory.0=8589934592\ncores.0=30\n"));
  EXPECT_TRUE(CdiSpec(tenant)["containerEdits"].contains("mounts"));
}

TEST_F(DraPluginTest, PreparingTwiceAnswersTheSameAndRewritesNothing) {
  ClaimRef c = CreateClaim("twice", {{"gpu-0", "8Gi", "30"}});
  auto first = kubelet_->Prepare({c});
  ASSERT_EQ(first.claims().at(c.uid).error(), "");
  struct stat limits_before {
  }, spec_before{};
  ASSERT_EQ(::stat((driver_->AllocationDir(c.uid) + "/limits").c_str(), &limits_before), 0);
  ASSERT_EQ(::stat(driver_->CdiSpecPath(c.uid).c_str(), &spec_before), 0);
  // kubelet calls again (after its restart): answered from the state, not the API server.
  ASSERT_TRUE(client_->Delete(kube::kResourceClaims, "default", "twice").ok());
  auto second = kubelet_->Prepare({c});
  EXPECT_EQ(second.SerializeAsString(), first.SerializeAsString());
  struct stat limits_after {
  }, spec_after{};
  ASSERT_EQ(::stat((driver_->AllocationDir(c.uid) + "/limits").c_str(), &limits_after), 0);
  ASSERT_EQ(::stat(driver_->CdiSpecPath(c.uid).c_str(), &spec_after), 0);
  EXPECT_EQ(limits_after.st_ino, limits_before.st_ino);  // a rewrite renames a new file in
  EXPECT_EQ(spec_after.st_ino, spec_before.st_ino);
  // A file that went missing is written again.
  fs::remove(driver_->CdiSpecPath(c.uid));
  EXPECT_EQ(kubelet_->Prepare({c}).SerializeAsString(), first.SerializeAsString());
  EXPECT_TRUE(fs::exists(driver_->CdiSpecPath(c.uid)));
}

TEST_F(DraPluginTest, UnprepareRemovesTheFilesAndUnknownClaimsAreFine) {
  ClaimRef c = CreateClaim("gone", {{"gpu-0", "8Gi", "30"}});
  ASSERT_EQ(kubelet_->Prepare({c}).claims().at(c.uid).error(), "");
  ASSERT_TRUE(driver_->Holds(c.uid));
  ClaimRef unknown{"default", "never", "uid-never"};
  auto out = kubelet_->Unprepare({c, unknown});
  ASSERT_EQ(out.claims_size(), 2);
  EXPECT_EQ(out.claims().at(c.uid).error(), "");
  EXPECT_EQ(out.claims().at(unknown.uid).error(), "");
  EXPECT_FALSE(fs::exists(driver_->AllocationDir(c.uid)));
  EXPECT_FALSE(fs::exists(driver_->RegionDir(c.uid)));
  EXPECT_FALSE(fs::exists(driver_->CdiSpecPath(c.uid)));
  EXPECT_FALSE(driver_->Holds(c.uid));
}

TEST_F(DraPluginTest, PreparedClaimsSurviveANewPluginInstance) {
  ClaimRef c = CreateClaim("kept", {{"gpu-1", "4Gi", "10"}});
  auto first = kubelet_->Prepare({c});
  ASSERT_EQ(first.claims().at(c.uid).error(), "");
  StopPlugin();
  EXPECT_FALSE(fs::exists(dir_.path() + "/kubelet/plugins_registry/gpu.tessera.io-reg.sock"));
  ASSERT_TRUE(client_->Delete(kube::kResourceClaims, "default", "kept").ok());
  StartPlugin();
  EXPECT_TRUE(driver_->Holds(c.uid));
  EXPECT_EQ(kubelet_->Prepare({c}).SerializeAsString(), first.SerializeAsString());
  EXPECT_THAT(Limits(c), HasSubstr("memory.0=4294967296\ncores.0=10\n"));
  EXPECT_EQ(kubelet_->Unprepare({c}).claims().at(c.uid).error(), "");
  EXPECT_FALSE(fs::exists(driver_->AllocationDir(c.uid)));
}

TEST_F(DraPluginTest, ClaimsThatCannotBePreparedFailWithAClearErrorAndWriteNothing) {
  ClaimRef replaced = CreateClaim("replaced", {{"gpu-0", "8Gi", "30"}});
  replaced.uid = "uid-of-the-deleted-claim";
  ClaimRef elsewhere = CreateClaim("elsewhere", {{"gpu-0", "8Gi", "30", "node-b"}});
  ClaimRef unknown = CreateClaim("unknown", {{"gpu-5", "8Gi", "30"}});
  ClaimRef missing{"default", "missing", "uid-missing"};
  ClaimRef fine = CreateClaim("fine", {{"gpu-0", "1Gi", "0"}});
  auto out = kubelet_->Prepare({replaced, elsewhere, unknown, missing, fine});
  ASSERT_EQ(out.claims_size(), 5);
  EXPECT_THAT(out.claims().at(replaced.uid).error(),
              HasSubstr("kubelet asked for uid-of-the-deleted-claim"));
  EXPECT_THAT(out.claims().at(elsewhere.uid).error(),
              HasSubstr("allocated from pool \"node-b\", this node's pool is \"node-a\""));
  EXPECT_THAT(out.claims().at(unknown.uid).error(),
              HasSubstr("device \"gpu-5\" is not on node node-a"));
  EXPECT_THAT(out.claims().at(missing.uid).error(),
              HasSubstr("cannot read ResourceClaim default/missing"));
  EXPECT_THAT(out.claims().at(missing.uid).error(), HasSubstr("not found"));
  for (const ClaimRef& c : {replaced, elsewhere, unknown, missing}) {
    EXPECT_EQ(out.claims().at(c.uid).devices_size(), 0);
    EXPECT_FALSE(fs::exists(driver_->AllocationDir(c.uid)));
    EXPECT_FALSE(driver_->Holds(c.uid));
  }
  EXPECT_EQ(out.claims().at(fine.uid).error(), "");
}

TEST_F(DraPluginTest, AClaimOnAnUnhealthyGpuFails) {
  ClaimRef c = CreateClaim("sick", {{"gpu-1", "8Gi", "30"}});
  board_.SetHealthy("GPU-1", false);
  EXPECT_THAT(kubelet_->Prepare({c}).claims().at(c.uid).error(),
              HasSubstr("device gpu-1 (GPU-1) is unhealthy"));
}

TEST_F(DraPluginTest, HealthIsStreamedNowOnChangeAndAgain) {
  grpc::ClientContext ctx;
  auto stream = kubelet_->health().NodeWatchResources(&ctx, healthpb::NodeWatchResourcesRequest());
  healthpb::NodeWatchResourcesResponse msg;
  ASSERT_TRUE(stream->Read(&msg));
  ASSERT_EQ(msg.devices_size(), 2);
  EXPECT_EQ(msg.devices(1).device().pool_name(), "node-a");
  EXPECT_EQ(msg.devices(1).device().device_name(), "gpu-1");
  EXPECT_EQ(msg.devices(1).health(), healthpb::HEALTHY);
  EXPECT_GT(msg.devices(1).last_updated_time(), 1'700'000'000);
  board_.SetHealthy("GPU-1", false);
  // The change comes next, or after a resend of the old health that crossed it.
  for (int i = 0; i < 3 && msg.devices(1).health() != healthpb::UNHEALTHY; ++i) {
    ASSERT_TRUE(stream->Read(&msg));
  }
  EXPECT_EQ(msg.devices(0).health(), healthpb::HEALTHY);
  EXPECT_EQ(msg.devices(1).health(), healthpb::UNHEALTHY);
  EXPECT_THAT(msg.devices(1).message(), HasSubstr("GPU-1"));
  // Unchanged health is sent again (kubelet takes silence for 30 s as Unknown).
  auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(stream->Read(&msg));
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(200));
  EXPECT_EQ(msg.devices(1).health(), healthpb::UNHEALTHY);
  ctx.TryCancel();
}

// A DaemonSet's rolling update with maxSurge: the old and the new agent serve at once under names
// of their own, and kubelet may prepare a claim through one and unprepare it through the other.
TEST_F(DraPluginTest, TwoInstancesServeAtOnceAndShareTheirClaims) {
  StopPlugin();
  Instance old_one = StartInstance("uid-old"), new_one = StartInstance("uid-new");
  EXPECT_EQ(old_one.plugin->RegistrationSocket(),
            dir_.path() + "/kubelet/plugins_registry/gpu.tessera.io-uid-old-reg.sock");
  EXPECT_EQ(old_one.plugin->ServiceSocket(),
            dir_.path() + "/kubelet/plugins/gpu.tessera.io/dra-uid-old.sock");
  EXPECT_EQ(new_one.plugin->RegistrationSocket(),
            dir_.path() + "/kubelet/plugins_registry/gpu.tessera.io-uid-new-reg.sock");
  for (Instance* i : {&old_one, &new_one}) {
    regpb::PluginInfo info;
    ASSERT_TRUE(i->kubelet->GetInfo(&info).ok());
    EXPECT_EQ(info.name(), "gpu.tessera.io");
    EXPECT_EQ(info.endpoint(), i->plugin->ServiceSocket());  // kubelet keeps one per endpoint
  }
  ClaimRef a = CreateClaim("a", {{"gpu-0", "8Gi", "30"}});
  ClaimRef b = CreateClaim("b", {{"gpu-1", "4Gi", "10"}});
  auto a_answer = old_one.kubelet->Prepare({a}), b_answer = new_one.kubelet->Prepare({b});
  ASSERT_EQ(a_answer.claims().at(a.uid).error(), "");
  ASSERT_EQ(b_answer.claims().at(b.uid).error(), "");
  // Each holds what the other prepared, and answers it from the shared state.
  EXPECT_TRUE(old_one.driver->Holds(b.uid));
  EXPECT_TRUE(new_one.driver->Holds(a.uid));
  ASSERT_TRUE(client_->Delete(kube::kResourceClaims, "default", "b").ok());
  EXPECT_EQ(old_one.kubelet->Prepare({b}).SerializeAsString(), b_answer.SerializeAsString());
  // Unprepared through the new one: gone for both.
  EXPECT_EQ(new_one.kubelet->Unprepare({a}).claims().at(a.uid).error(), "");
  EXPECT_FALSE(fs::exists(new_one.driver->AllocationDir(a.uid)));
  EXPECT_FALSE(old_one.driver->Holds(a.uid));
  // The old one stops: its sockets go, the new one's stay and serve.
  old_one.kubelet.reset();
  old_one.plugin->Stop();
  EXPECT_FALSE(fs::exists(old_one.plugin->RegistrationSocket()));
  EXPECT_FALSE(fs::exists(old_one.plugin->ServiceSocket()));
  EXPECT_TRUE(fs::exists(new_one.plugin->RegistrationSocket()));
  EXPECT_EQ(new_one.kubelet->Unprepare({b}).claims().at(b.uid).error(), "");
  EXPECT_FALSE(fs::exists(new_one.driver->AllocationDir(b.uid)));
  new_one.kubelet.reset();
  new_one.plugin->Stop();
}

TEST_F(DraPluginTest, AnInstanceUidThatIsNotANameIsRefused) {
  DraDriver driver(DraOptions{.node_name = "node-a", .state_dir = dir_.path() + "/state"}, *source_,
                   board_);
  DraPlugin plugin(DraPluginOptions{.kubelet_dir = dir_.path() + "/kubelet",
                                    .pool = "node-a",
                                    .instance_uid = "../elsewhere"},
                   driver, board_);
  Status s = plugin.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node.dra.instance-uid \"../elsewhere\""));
  EXPECT_FALSE(
      fs::exists(dir_.path() + "/kubelet/plugins_registry/gpu.tessera.io-../elsewhere-reg.sock"));
}

// A unix socket whose process died without removing it: connecting is refused.
void MakeDeadSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  ::close(fd);
}

// An instance that died leaves its sockets (and kubelet a registration that never answers): the
// next instance removes them; live ones and other drivers' stay.
TEST_F(DraPluginTest, SocketsThatNoProcessServesAreRemoved) {
  const std::string registry = dir_.path() + "/kubelet/plugins_registry/";
  const std::string service = dir_.path() + "/kubelet/plugins/gpu.tessera.io/";
  MakeDeadSocket(registry + "gpu.tessera.io-uid-dead-reg.sock");
  MakeDeadSocket(service + "dra-uid-dead.sock");
  MakeDeadSocket(registry + "other.example.com-reg.sock");
  Instance next = StartInstance("uid-next");
  EXPECT_FALSE(fs::exists(registry + "gpu.tessera.io-uid-dead-reg.sock"));
  EXPECT_FALSE(fs::exists(service + "dra-uid-dead.sock"));
  EXPECT_TRUE(fs::exists(registry + "other.example.com-reg.sock"));
  // The fixture's instance (the fixed names) is alive: kept.
  EXPECT_TRUE(fs::exists(plugin_->RegistrationSocket()));
  EXPECT_TRUE(fs::exists(plugin_->ServiceSocket()));
  regpb::PluginInfo info;
  EXPECT_TRUE(kubelet_->GetInfo(&info).ok());
  next.kubelet.reset();
  next.plugin->Stop();
}

TEST_F(DraPluginTest, RemovedSocketsAreServedAgain) {
  ASSERT_EQ(plugin_->Serves(), 1);
  fs::remove_all(dir_.path() + "/kubelet/plugins_registry");
  ASSERT_TRUE(kube::WaitUntil([&] { return plugin_->Serves() == 2; }));
  FakeKubelet again(plugin_->RegistrationSocket(), plugin_->ServiceSocket());
  regpb::PluginInfo info;
  ASSERT_TRUE(again.GetInfo(&info).ok());
  EXPECT_EQ(info.name(), "gpu.tessera.io");
  ClaimRef c = CreateClaim("after", {{"gpu-0", "8Gi", "30"}});
  EXPECT_EQ(again.Prepare({c}).claims().at(c.uid).error(), "");
}

}  // namespace
}  // namespace tessera::node::dra
