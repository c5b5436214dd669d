#include "scheduler/protocol.h"

#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

TEST(Protocol, InventoryRoundTripAndDefaults) {
  std::vector<GpuInfo> gpus = {{"GPU-a", 0, "NVIDIA H200", 143771, 132, 0, true, 10},
                               {"GPU-b", 1, "NVIDIA H200", 143771, 132, 1, false, 10}};
  Result<std::vector<GpuInfo>> back = ParseInventory(InventoryToJson(gpus));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, gpus);

  back = ParseInventory(
      R"({"version":1,"gpus":[{"uuid":"GPU-x","index":0,"model":"T4","memoryMiB":15360,"extra":1}]})");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE((*back)[0].healthy);
  EXPECT_EQ((*back)[0].numa, -1);
  EXPECT_EQ((*back)[0].slots, 0) << "an inventory without slots does not count them";
  bool serving = false;
  ASSERT_TRUE(ParseInventory(InventoryToJson(gpus), &serving).ok());
  EXPECT_TRUE(serving);
  ASSERT_TRUE(ParseInventory(InventoryToJson(gpus, /*serving=*/false), &serving).ok());
  EXPECT_FALSE(serving);
  ASSERT_TRUE(ParseInventory(R"({"version":1,"gpus":[]})", &serving).ok());
  EXPECT_TRUE(serving) << "an agent from before the field serves";
}

TEST(Protocol, InventoryErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"not json", "not valid JSON"},
      {R"({"version":2,"gpus":[]})", "\"version\" must be 1"},
      {R"({"version":1})", "\"gpus\" must be a list"},
      {R"({"version":1,"gpus":[{"index":0,"model":"T4","memoryMiB":1}]})",
       "gpus[0]: field \"uuid\" is missing"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":"big"}]})",
       "field \"memoryMiB\" has the wrong type"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1},)"
       R"({"uuid":"a","index":1,"model":"T4","memoryMiB":1}]})",
       "uuid a appears twice"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1,"slots":-1}]})",
       "gpus[0]: \"slots\" must not be negative"},
  };
  for (const Case& c : cases) {
    Result<std::vector<GpuInfo>> r = ParseInventory(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
}

TEST(Protocol, AllocationRoundTrip) {
  Allocation a{"node-1",
               {{"init", true, ComputeMode::kHard, {{"GPU-a", 1000, 0, 0, false}}},
                {"main",
                 false,
                 ComputeMode::kElastic,
                 {{"GPU-a", 4096, 30, 80, false}, {"GPU-b", 4096, 30, 80, false}}},
                {"solo", false, ComputeMode::kHard, {{"GPU-c", 80000, 100, 0, true}}, true}}};
  std::string text = AllocationToJson(a);
  EXPECT_NE(text.find(R"("slot":true)"), std::string::npos);
  EXPECT_NE(text.find(R"("mode":"elastic")"), std::string::npos);
  Result<Allocation> back = ParseAllocation(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, a);
  EXPECT_FALSE(
      ParseAllocation(
          R"({"version":1,"node":"n","containers":[{"name":"c","mode":"soft","devices":[]}]})")
          .ok());
  EXPECT_FALSE(ParseAllocation(R"({"version":1,"containers":[]})").ok());
}

TEST(Protocol, ChargesArePeakOfInitAgainstSumOfApp) {
  Allocation a{"n",
               {{"init1", true, ComputeMode::kHard, {{"GPU-a", 6000, 50, 0, false}}},
                {"init2", true, ComputeMode::kHard, {{"GPU-b", 1000, 0, 0, false}}},
                {"app1", false, ComputeMode::kHard, {{"GPU-a", 2000, 20, 0, false}}},
                {"app2",
                 false,
                 ComputeMode::kHard,
                 {{"GPU-a", 3000, 20, 0, false}, {"GPU-c", 500, 0, 0, true}}}}};
  std::vector<GpuCharge> want = {
      {"GPU-a", 6000, 50, false}, {"GPU-b", 1000, 0, false}, {"GPU-c", 500, 0, true}};
  EXPECT_EQ(ChargesOf(a), want);
}

TEST(Protocol, SlotsArePeakOfInitAgainstSumOfApp) {
  Allocation a{"n",
               {{"init",
                 true,
                 ComputeMode::kHard,
                 {{"GPU-a", 1, 0, 0, false}, {"GPU-b", 1, 0, 0, false}},
                 true},
                {"app1", false, ComputeMode::kHard, {{"GPU-a", 1, 0, 0, false}}, true},
                {"app2", false, ComputeMode::kHard, {{"GPU-a", 1, 0, 0, false}}, true},
                {"app3", false, ComputeMode::kHard, {{"GPU-c", 1, 0, 0, false}}}}};
  std::vector<GpuCharge> charges = ChargesOf(a);
  ASSERT_EQ(charges.size(), 3u);
  EXPECT_EQ(charges[0].slots, 2);  // two app containers against one init container
  EXPECT_EQ(charges[1].slots, 1);  // the init container alone
  EXPECT_EQ(charges[2].slots, 0);  // a container that takes no slot
}

}  // namespace
}  // namespace tessera::scheduler
