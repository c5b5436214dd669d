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

// MIG instances ride under their GPU; a GPU without "mig" is written exactly as before, so an
// older scheduler reads every field it knows unchanged (it ignores the unknown "mig").
TEST(Inventory, MigInstancesRoundTripUnderTheirGpu) {
  InventoryGpu h100{"GPU-a", 0, "NVIDIA H100 80GB HBM3", 81559, 132, 0, true, 10, "", 1};
  h100.mig = InventoryMig{.mode = "fixed",
                          .enabled = true,
                          .pending = true,
                          .instances = {{.uuid = "MIG-1",
                                         .profile = "3g.40gb",
                                         .device = "",
                                         .start = 0,
                                         .size = 4,
                                         .memory_mib = 40448,
                                         .sms = 60,
                                         .healthy = true},
                                        {.uuid = "MIG-2",
                                         .profile = "3g.40gb",
                                         .device = "1c.3g.40gb",
                                         .start = 4,
                                         .size = 4,
                                         .memory_mib = 40448,
                                         .sms = 16,
                                         .healthy = false}}};
  InventoryGpu pending{"GPU-b", 1, "NVIDIA H100 80GB HBM3", 81559, 132, 0, true, 10, "", 1};
  pending.mig = InventoryMig{.mode = "dynamic", .enabled = false, .pending = true, .instances = {}};
  InventoryGpu plain{"GPU-c", 2, "T4", 15360, 40, 0, true, 10, "", 1};
  const Inventory inventory{true, {h100, pending, plain}};
  const std::string text = InventoryToJson(inventory);
  Result<Inventory> back = ParseInventory(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, inventory);
  EXPECT_NE(text.find(R"("mig":{"enabled":true,"instances":[{"healthy":true,"memoryMiB":40448,)"
                      R"("profile":"3g.40gb","size":4,"sms":60,"start":0,"uuid":"MIG-1"},)"),
            std::string::npos)
      << text;
  EXPECT_EQ(InventoryToJson({true, {plain}}),
            R"({"gpus":[{"coresScaling":1.0,"healthy":true,"index":2,"memoryMiB":15360,)"
            R"("memoryScaling":1.0,"model":"T4","numa":0,"slots":10,"sms":40,"uuid":"GPU-c"}],)"
            R"("serving":true,"version":1})");
}

TEST(Inventory, MigErrorsNameTheInstance) {
  const std::string gpu = R"({"version":1,"gpus":[{"uuid":"GPU-a","index":0,"model":"H100",)"
                          R"("memoryMiB":1,"mig":)";
  struct Case {
    std::string mig;
    const char* message;
  } cases[] = {
      {"7", "gpus[0]: \"mig\" is not an object"},
      {R"({"mode":"half"})", "gpus[0] mig: \"mode\" \"half\" is not one of none, fixed, dynamic"},
      {R"({"enabled":"yes"})", "gpus[0] mig: field \"enabled\" has the wrong type"},
      {R"({"instances":{}})", "gpus[0] mig: \"instances\" must be a list"},
      {R"({"instances":[{"profile":"1g.10gb"}]})",
       "gpus[0] mig.instances[0]: field \"uuid\" is missing"},
      {R"({"instances":[{"uuid":"MIG-1","profile":""}]})",
       "gpus[0] mig.instances[0]: \"profile\" is empty"},
      {R"({"instances":[{"uuid":"MIG-1","profile":"3g.40gb","start":6,"size":4}]})",
       "mig.instances[0] (MIG-1): placement start 6 size 4 is outside the GPU's memory slices"},
      {R"({"instances":[{"uuid":"MIG-1","profile":"1g.10gb"},{"uuid":"MIG-1","profile":"1g.10gb"}]})",
       "gpus[0] mig.instances[1]: uuid MIG-1 appears twice"},
      {R"({"instances":[{"uuid":"GPU-a","profile":"1g.10gb"}]})",
       "gpus[0] mig.instances[0]: uuid GPU-a appears twice"},
  };
  for (const Case& c : cases) {
    const std::string text = gpu + c.mig + "}]}";
    Result<Inventory> r = ParseInventory(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace tessera::annotations
