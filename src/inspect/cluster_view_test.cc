// ClusterView: charges per GPU as the scheduler counts them, GPUs outside the inventory, node
// selection messages, ordering and the JSON totals.
#include "inspect/cluster_view.h"

#include <gtest/gtest.h>

#include "inspect/render.h"
#include "inspect/scheduler_source.h"

namespace tessera::inspect {
namespace {

using scheduler::Allocation;
using scheduler::ContainerAllocation;
using scheduler::DeviceAllocation;
using scheduler::GpuInfo;

std::vector<GpuInfo> TwoGpus() {
  GpuInfo a{.uuid = "GPU-a", .index = 0, .model = "L4", .memory_mib = 24000};
  GpuInfo b{.uuid = "GPU-b", .index = 1, .model = "L4", .memory_mib = 24000};
  return {b, a};
}

TEST(ClusterView, ChargesInitPeakAgainstAppSumPerGpu) {
  ClusterView view;
  view.AddNode("n1", TwoGpus());
  Allocation alloc{
      .node = "n1",
      .containers = {
          ContainerAllocation{
              .name = "init", .init = true, .devices = {DeviceAllocation{"GPU-a", 6000, 10}}},
          ContainerAllocation{.name = "x", .devices = {DeviceAllocation{"GPU-a", 2000, 20}}},
          ContainerAllocation{.name = "y", .devices = {DeviceAllocation{"GPU-a", 3000, 30}}},
      }};
  view.AddAllocation("default/p", alloc);
  view.Finish();
  ASSERT_EQ(view.nodes.size(), 1u);
  const GpuView& a = view.nodes[0].gpus[0];
  EXPECT_EQ(a.uuid, "GPU-a");
  EXPECT_EQ(a.used_mib, 6000u);  // init peak 6000 > app sum 5000
  EXPECT_EQ(a.used_cores, 50);   // app sum 50 > init peak 10
  ASSERT_EQ(a.pods.size(), 1u);
  EXPECT_EQ(a.pods[0].containers, (std::vector<std::string>{"init", "x", "y"}));
  EXPECT_EQ(view.nodes[0].gpus[1].used_mib, 0u);
}

// Before, -o json gave "containers" as one joined string ("init,x").
TEST(ClusterView, JsonContainersAreAnArray) {
  ClusterView view;
  view.AddNode("n1", TwoGpus());
  view.AddAllocation(
      "default/p",
      Allocation{
          .node = "n1",
          .containers = {
              ContainerAllocation{.name = "a,b", .devices = {DeviceAllocation{"GPU-a", 1000, 0}}},
              ContainerAllocation{.name = "c", .devices = {DeviceAllocation{"GPU-a", 1000, 0}}}}});
  view.Finish();
  nlohmann::json pod = view.ToJson()["nodes"][0]["gpus"][0]["pods"][0];
  EXPECT_EQ(pod["containers"], nlohmann::json({"a,b", "c"}));
}

TEST(ClusterView, UsageOnAGpuOutsideTheInventoryIsShownNotDropped) {
  ClusterView view;
  view.AddNode("n1", TwoGpus());
  view.AddAllocation("default/p",
                     {.node = "n1",
                      .containers = {ContainerAllocation{
                          .name = "c", .devices = {DeviceAllocation{"GPU-gone", 100, 0}}}}});
  view.AddAllocation("default/q",
                     {.node = "n9",
                      .containers = {ContainerAllocation{
                          .name = "c", .devices = {DeviceAllocation{"GPU-z", 100, 0}}}}});
  view.Finish();
  ASSERT_EQ(view.nodes.size(), 2u);
  ASSERT_EQ(view.nodes[0].gpus.size(), 3u);
  EXPECT_EQ(view.nodes[0].gpus[2].uuid, "GPU-gone");  // last, after the indexed GPUs
  EXPECT_EQ(view.nodes[0].gpus[2].index, -1);
  EXPECT_EQ(view.nodes[1].name, "n9");
  Totals t = view.ComputeTotals();
  EXPECT_EQ(t.gpus, 4u);
  EXPECT_EQ(t.cores, 200);  // unknown GPUs have no known capacity
  EXPECT_EQ(t.used_mib, 200u);
  EXPECT_EQ(t.pods, 2u);
  std::string text = Render(view, {});
  EXPECT_NE(text.find("n1    ?    (not in the node's inventory)"), std::string::npos) << text;
}

TEST(ClusterView, KeepOnlyNode) {
  ClusterView view;
  view.AddNode("gpu-1", TwoGpus());
  view.AddNode("gpu-2", TwoGpus());
  EXPECT_TRUE(view.KeepOnlyNode("gpu-2", {"gpu-1", "gpu-2", "cpu"}).ok());
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].name, "gpu-2");

  ClusterView again;
  again.AddNode("gpu-1", TwoGpus());
  Status missing = again.KeepOnlyNode("gpu-7", {"gpu-1", "cpu"});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "node \"gpu-7\" not found; did you mean \"gpu-1\"? Tessera GPU nodes: gpu-1");
  EXPECT_EQ(again.KeepOnlyNode("cpu", {"gpu-1", "cpu"}).code(), StatusCode::kFailedPrecondition);
}

// Issue 33: the scheduler's /inspect gives memoryScaling and virtualMemoryMiB (older schedulers
// neither: the memory is not scaled); the view places the shares against the virtual memory,
// and a DRA share of the whole GPU holds all of it.
TEST(ClusterView, SchedulersScaledMemoryIsReadAndShown) {
  nlohmann::json doc = {
      {"nodes",
       {{{"name", "n1"},
         {"gpus",
          {{{"uuid", "GPU-a"},
            {"index", 0},
            {"model", "L4"},
            {"memoryMiB", 24000},
            {"memoryScaling", 2},
            {"virtualMemoryMiB", 48000}},
           {{"uuid", "GPU-b"}, {"index", 1}, {"model", "L4"}, {"memoryMiB", 24000}}}}}}},
      {"allocations", nlohmann::json::array()},
      {"pending", nlohmann::json::array()}};
  Result<SchedulerSnapshot> snap = ParseSchedulerInspect(doc);
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  ClusterView& view = snap->view;
  view.AddAllocation(
      "default/p", Allocation{.node = "n1",
                              .containers = {ContainerAllocation{
                                  .name = "c", .devices = {DeviceAllocation{"GPU-a", 30000, 0}}}}});
  view.AddDraShare("n1", "gpu-1", PodShare{.pod = "default/claim"}, /*whole_memory=*/true);
  view.Finish();
  const GpuView& a = view.nodes[0].gpus[0];
  EXPECT_EQ(a.memory_mib, 24000u);
  EXPECT_EQ(a.virtual_memory_mib, 48000u);
  EXPECT_EQ(view.nodes[0].gpus[1].used_mib, 24000u) << "unscaled: its physical memory";
  const std::string text = Render(view, RenderOptions{});
  EXPECT_NE(text.find("30000/48000 (63%), 125% of 24000 physical"), std::string::npos) << text;
  EXPECT_NE(text.find("24000/24000 (100%) "), std::string::npos) << text;
  EXPECT_NE(text.find("memory 54000/72000 MiB (75%, virtual; 48000 MiB physical)"),
            std::string::npos)
      << text;
  nlohmann::json json = view.ToJson();
  EXPECT_EQ(json["nodes"][0]["gpus"][0]["virtualMemoryMiB"], 48000);
  EXPECT_EQ(json["nodes"][0]["gpus"][0]["memoryScaling"], 2.0);
  EXPECT_EQ(json["nodes"][0]["gpus"][1]["virtualMemoryMiB"], 24000);
  EXPECT_EQ(json["totals"]["virtualMemoryMiB"], 72000);
  EXPECT_EQ(json["totals"]["memoryMiB"], 48000);

  doc["nodes"][0]["gpus"][1]["memoryScaling"] = 20;
  Result<SchedulerSnapshot> bad = ParseSchedulerInspect(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node n1 GPU GPU-b: \"memoryScaling\" is not a number "
                                        "from 1 to 10"),
            std::string::npos)
      << bad.status().message();
}

TEST(ClusterView, EmptyClusterSaysSo) {
  ClusterView view;
  view.Finish();
  std::string text = Render(view, {});
  EXPECT_EQ(text,
            "No Tessera GPU nodes (no node has a tessera.io/gpus annotation yet).\n\n"
            "Total: 0 nodes, 0 GPUs, 0 pods; memory 0/0 MiB (-); cores 0/0% (-)\n"
            "Pending pods: none\n");
}

}  // namespace
}  // namespace tessera::inspect
