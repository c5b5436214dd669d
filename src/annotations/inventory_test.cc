#include "annotations/inventory.h"

#include <gtest/gtest.h>

namespace tessera::annotations {
namespace {

TEST(Inventory, RoundTrips) {
  InventoryGpu h200{"GPU-a", 0, "NVIDIA H200", 143771, 132, 0, true, 10, "00000000:17:00.0", 1};
  InventoryGpu sick{"GPU-b", 1, "NVIDIA H200", 143771, 132, 1, false, 0, "", 0.5};
  InventoryGpu doubled{"GPU-c", 2, "SimGPU-3090", 24268, 82, 0, true, 10, "", 1, 2};
  InventoryGpu most{"GPU-d", 3, "T4", 15360, 40, 0, true, 10, "", 1, 10};
  InventoryGpu fraction{"GPU-e", 4, "T4", 15360, 40, 0, true, 10, "", 1, 1.25};
  const Inventory cases[] = {
      {},
      {true, {h200}},
      {false, {h200, sick}},
      {true, {h200, doubled, most, fraction}},
  };
  for (const Inventory& inventory : cases) {
    std::string text = InventoryToJson(inventory);
    Result<Inventory> back = ParseInventory(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    EXPECT_EQ(*back, inventory) << text;
  }
}

TEST(Inventory, VirtualMemoryIsPhysicalTimesTheScalingRoundedDown) {
  InventoryGpu g{"GPU-a", 0, "SimGPU-3090", 24268, 82, 0, true, 10, "", 1, 2};
  EXPECT_EQ(g.virtual_memory_mib(), 48536u);
  g.memory_scaling = 1;
  EXPECT_EQ(g.virtual_memory_mib(), 24268u);
  g.memory_scaling = 1.1;  // 26694.8
  EXPECT_EQ(g.virtual_memory_mib(), 26694u);
  g.memory_scaling = 10;
  EXPECT_EQ(g.virtual_memory_mib(), 242680u);
  EXPECT_EQ(VirtualMemoryMiB(143771, 1.5), 215656u);  // 215656.5
  EXPECT_EQ(MemoryScalingText(2), "2");
  EXPECT_EQ(MemoryScalingText(1.5), "1.5");
  EXPECT_EQ(MemoryScalingText(1.1), "1.1");
}

// What agents of earlier versions wrote is still read, the fields they lacked taking their
// defaults: before "serving" (serving), before "slots" (not counted), before "pciBusId" and
// "coresScaling" (the scheduler's test writer never wrote them), before "memoryScaling" (1: the
// physical memory is all there is), with fields the reader does not know (ignored).
TEST(Inventory, ReadsWhatEarlierAgentsWrote) {
  struct Case {
    const char* text;
    Inventory want;
  } cases[] = {
      {R"({"version":1,"gpus":[{"uuid":"GPU-x","index":0,"model":"T4","memoryMiB":15360,)"
       R"("sms":40,"numa":0,"healthy":true}]})",
       {true, {{"GPU-x", 0, "T4", 15360, 40, 0, true, 0, "", 1}}}},
      {R"({"version":1,"serving":false,"gpus":[{"uuid":"GPU-x","index":0,"model":"T4",)"
       R"("memoryMiB":15360,"sms":40,"numa":-1,"healthy":false,"slots":4}]})",
       {false, {{"GPU-x", 0, "T4", 15360, 40, -1, false, 4, "", 1}}}},
      {R"({"version":1,"gpus":[{"uuid":"GPU-x","index":2,"model":"T4","memoryMiB":15360,)"
       R"("extra":1}],"future":true})",
       {true, {{"GPU-x", 2, "T4", 15360, 0, -1, true, 0, "", 1}}}},
  };
  for (const Case& c : cases) {
    Result<Inventory> back = ParseInventory(c.text);
    ASSERT_TRUE(back.ok()) << c.text << ": " << back.status().message();
    EXPECT_EQ(*back, c.want) << c.text;
  }
}

TEST(Inventory, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"not json", "not valid JSON"},
      {"[1]", "not a JSON object"},
      {R"({"version":2,"gpus":[]})", "\"version\" must be 1"},
      {R"({"gpus":[]})", "\"version\" must be 1"},
      {R"({"version":1})", "\"gpus\" must be a list"},
      {R"({"version":1,"serving":"yes","gpus":[]})", "field \"serving\" has the wrong type"},
      {R"({"version":1,"gpus":[7]})", "gpus[0] is not an object"},
      {R"({"version":1,"gpus":[{"index":0,"model":"T4","memoryMiB":1}]})",
       "gpus[0]: field \"uuid\" is missing"},
      {R"({"version":1,"gpus":[{"uuid":"","index":0,"model":"T4","memoryMiB":1}]})",
       "gpus[0]: \"uuid\" is empty"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":"big"}]})",
       "field \"memoryMiB\" has the wrong type"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":-1}]})",
       "field \"memoryMiB\" has the wrong type"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1},)"
       R"({"uuid":"a","index":1,"model":"T4","memoryMiB":1}]})",
       "gpus[1]: uuid a appears twice"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1,"slots":-1}]})",
       "gpus[0]: \"slots\" must not be negative"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1,)"
       R"("coresScaling":0}]})",
       "gpus[0]: \"coresScaling\" must be above 0"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1},)"
       R"({"uuid":"b","index":1,"model":"T4","memoryMiB":1,"memoryScaling":0.5}]})",
       "gpus[1] (b): \"memoryScaling\" 0.5 is outside 1 to 10"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1,)"
       R"("memoryScaling":10.5}]})",
       "gpus[0] (a): \"memoryScaling\" 10.5 is outside 1 to 10"},
      {R"({"version":1,"gpus":[{"uuid":"a","index":0,"model":"T4","memoryMiB":1,)"
       R"("memoryScaling":"2"}]})",
       "gpus[0]: field \"memoryScaling\" has the wrong type"},
  };
  for (const Case& c : cases) {
    Result<Inventory> r = ParseInventory(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.text << ": " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("tessera.io/gpus", 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace tessera::annotations
