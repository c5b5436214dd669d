// The scheduler source (scheduler_source.h): what issue 35 added to GET /inspect (the pending
// pods' last filter reasons, the DRA shares) and the bearer token it sends.
#include "inspect/scheduler_source.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "inspect/inspect_command.h"
#include "inspect/inspect_test_support.h"

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

const json kDoc = json::parse(R"j({
  "nodes": [{"name": "gpu-a", "gpus": [
    {"uuid": "GPU-0", "index": 0, "model": "A100", "memoryMiB": 40960},
    {"uuid": "GPU-1", "index": 1, "model": "A100", "memoryMiB": 40960}]}],
  "allocations": [],
  "pending": [{"pod": "default/big", "containers": [{"name": "main", "request": "1 GPU x 50000 MiB"}],
    "filter": {"time": "2026-12-06T05:00:00Z", "nodesChecked": 3, "fits": [], "fitsLeftOut": 0,
      "reasons": [{"node": "cpu-1", "reason": "node has no Tessera GPU inventory (never seen)", "unresolvable": true},
                  {"node": "gpu-a", "reason": "insufficient GPU memory: need 50000 MiB", "unresolvable": true}],
      "reasonsLeftOut": 1}},
    {"pod": "ml/new", "containers": [{"name": "main", "request": "1 GPU x all memory"}]}],
  "draShares": [
    {"claim": "team-a/shared", "node": "gpu-a", "device": "gpu-1", "gpuIndex": 1, "memoryMiB": 2048,
     "wholeMemory": false, "cores": 30, "pods": ["team-a/reader"], "dra": true},
    {"claim": "ml/whole", "node": "gpu-a", "device": "gpu-0", "gpuIndex": 0, "memoryMiB": 40960,
     "wholeMemory": true, "cores": 0, "pods": [], "dra": true}],
  "warnings": ["claim team-a/bad: device gpu-0: consumedCapacity cores: 150 is over 100"]})j");

TEST(SchedulerSource, APendingPodSaysTheSchedulersLastFilterReasons) {
  Result<SchedulerSnapshot> snap = ParseSchedulerInspect(kDoc);
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  ASSERT_EQ(snap->view.pending.size(), 2u);
  EXPECT_EQ(snap->view.pending[0].reason,
            "waiting for a GPU; requests main: 1 GPU x 50000 MiB; last filter: 0/3 nodes fit: "
            "cpu-1: node has no Tessera GPU inventory (never seen); gpu-a: insufficient GPU "
            "memory: need 50000 MiB; and 1 more nodes");
  // Not filtered yet: the request only, as before.
  EXPECT_EQ(snap->view.pending[1].reason, "waiting for a GPU; requests main: 1 GPU x all memory");
}

TEST(SchedulerSource, DraSharesAreChargedToTheirGpusAsClaims) {
  Result<SchedulerSnapshot> snap = ParseSchedulerInspect(kDoc);
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  const NodeView& node = snap->view.nodes.at(0);
  ASSERT_EQ(node.gpus.size(), 2u);
  ASSERT_EQ(node.gpus[1].pods.size(), 1u);
  const PodShare& shared = node.gpus[1].pods[0];
  EXPECT_EQ(shared.pod, "team-a/shared");
  EXPECT_TRUE(shared.dra);
  EXPECT_EQ(shared.memory_mib, 2048u);
  EXPECT_EQ(shared.cores, 30);
  EXPECT_EQ(shared.containers, std::vector<std::string>{"team-a/reader"});
  EXPECT_EQ(node.gpus[1].used_mib, 2048u);
  EXPECT_EQ(node.gpus[0].used_mib, 40960u);  // the whole memory
  EXPECT_EQ(snap->view.warnings,
            std::vector<std::string>{
                "claim team-a/bad: device gpu-0: consumedCapacity cores: 150 is over 100"});
  // With a namespace, only its claims.
  Result<SchedulerSnapshot> ml = ParseSchedulerInspect(kDoc, "ml");
  ASSERT_TRUE(ml.ok());
  EXPECT_TRUE(ml->view.nodes.at(0).gpus[1].pods.empty());
  EXPECT_EQ(ml->view.nodes.at(0).gpus[0].pods.size(), 1u);

  json bad = kDoc;
  bad["draShares"][0].erase("device");
  EXPECT_FALSE(ParseSchedulerInspect(bad).ok());
}

TEST(SchedulerSource, SendsTheTokenAndSaysWhichOneARefusalWants) {
  httplib::Server server;
  server.Get("/inspect", [](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer t-1") {
      res.status = 401;
      res.set_content(R"({"error":"no Authorization header"})", "application/json");
      return;
    }
    res.set_content(R"({"nodes":[],"allocations":[],"pending":[]})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  for (int i = 0; i < 5000 && !server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  Result<std::string> refused = GetFromScheduler(url, "/inspect", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("HTTP 401"), std::string::npos);
  EXPECT_NE(refused.status().message().find("--inspect.scheduler-token-file"), std::string::npos)
      << refused.status().message();
  Result<SchedulerSnapshot> read = ReadFromScheduler(url, {.token = "t-1"});
  EXPECT_TRUE(read.ok()) << read.status().message();

  // The command reads the token from --inspect.scheduler-token-file, without its newline.
  auto run = [](const config::Config& c, const std::vector<std::string>& p, std::ostream& out,
                std::ostream& err) { return RunInspect(c, p, {}, false, out, err); };
  const std::string file = ::testing::TempDir() + "/scheduler-token";
  std::ofstream(file) << "t-1\n";
  InspectRun shown =
      RunWithArgs({"--scheduler", url, "--inspect.scheduler-token-file=" + file}, run);
  EXPECT_EQ(shown.code, 0) << shown.err;
  InspectRun without = RunWithArgs({"--scheduler", url}, run);
  EXPECT_EQ(without.code, 1);
  EXPECT_NE(without.err.find("HTTP 401"), std::string::npos) << without.err;
  InspectRun missing =
      RunWithArgs({"--scheduler", url, "--inspect.scheduler-token-file=" + file + ".gone"}, run);
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("cannot be read"), std::string::npos) << missing.err;
  std::ofstream(file) << "  \n";
  InspectRun empty =
      RunWithArgs({"--scheduler", url, "--inspect.scheduler-token-file=" + file}, run);
  EXPECT_NE(empty.err.find("is empty"), std::string::npos) << empty.err;
  std::remove(file.c_str());
  server.stop();
  serving.join();
}

}  // namespace
}  // namespace tessera::inspect
