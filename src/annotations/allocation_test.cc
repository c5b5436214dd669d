#include "annotations/allocation.h"

#include <gtest/gtest.h>

namespace tessera::annotations {
namespace {

using Mode = ComputeMode;

TEST(Allocation, RoundTrips) {
  const Allocation cases[] = {
      {"node-1", {}},
      {"node-1",
       {{"init", true, Mode::kHard, {{"GPU-a", 1000, 0, 0, false}}},
        {"main", false, Mode::kElastic, {{"GPU-a", 4096, 30, 80, false}, {"GPU-b", 4096, 30, 80}}},
        {"solo", false, Mode::kHard, {{"GPU-c", 80000, 100, 0, true}}, true}}},
      {"n", {{"vgpu", false, Mode::kHard, {{"GPU-a", 2048, 25, 0, false}}, true}}},
      {"n", {{"burst", false, Mode::kElastic, {{"GPU-a", 1, 0, 0, false}}}}},
  };
  for (const Allocation& a : cases) {
    std::string text = AllocationToJson(a);
    Result<Allocation> back = ParseAllocation(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    EXPECT_EQ(*back, a) << text;
  }
  std::string text = AllocationToJson(cases[1]);
  EXPECT_EQ(text.find("coresLimit\":0"), std::string::npos) << "omitted when none";
  EXPECT_NE(text.find(R"("init":true)"), std::string::npos);
  EXPECT_NE(text.find(R"("exclusive":true)"), std::string::npos);
}

// What schedulers of earlier versions wrote is still read: before "init", "slot", "coresLimit"
// and "exclusive" (each omitted when false or none), and without "mode" (hard).
TEST(Allocation, ReadsWhatEarlierSchedulersWrote) {
  struct Case {
    const char* text;
    Allocation want;
  } cases[] = {
      {R"({"version":1,"node":"n","containers":[{"name":"main","mode":"hard",)"
       R"("devices":[{"uuid":"GPU-a","memoryMiB":4096,"cores":30}]}]})",
       {"n", {{"main", false, Mode::kHard, {{"GPU-a", 4096, 30, 0, false}}}}}},
      {R"({"version":1,"node":"n","containers":[{"name":"main",)"
       R"("devices":[{"uuid":"GPU-a","memoryMiB":1,"cores":0,"later":{"x":1}}]}],"extra":[]})",
       {"n", {{"main", false, Mode::kHard, {{"GPU-a", 1, 0, 0, false}}}}}},
  };
  for (const Case& c : cases) {
    Result<Allocation> back = ParseAllocation(c.text);
    ASSERT_TRUE(back.ok()) << c.text << ": " << back.status().message();
    EXPECT_EQ(*back, c.want) << c.text;
  }
}

// The rules the scheduler and the node agent once applied differently, decided here once
// (docs/annotations.md): a device without memoryMiB is malformed (the node read it as no limit),
// the version must be 1 (the scheduler ignored it), coresLimit is checked against cores (only
// the node did), and a container's devices are a non-empty list of distinct GPUs.
TEST(Allocation, ErrorsNameTheField) {
  auto with = [](const char* device, const char* mode = "hard") {
    return std::string(R"({"version":1,"node":"n","containers":[{"name":"c","mode":")") + mode +
           R"(","devices":[)" + device + "]}]}";
  };
  struct Case {
    std::string text;
    const char* message;
  } cases[] = {
      {"{", "not valid JSON"},
      {R"({"version":2,"node":"n","containers":[]})", "\"version\" must be 1"},
      {R"({"node":"n","containers":[]})", "\"version\" must be 1"},
      {R"({"version":1,"containers":[]})", "field \"node\" is missing"},
      {R"({"version":1,"node":"","containers":[]})", "\"node\" is empty"},
      {R"({"version":1,"node":"n"})", "\"containers\" must be a list"},
      {R"({"version":1,"node":"n","containers":[{"devices":[]}]})",
       "containers[0]: field \"name\" is missing"},
      {R"({"version":1,"node":"n","containers":[{"name":"c","devices":[]}]})",
       "containers[0]: \"devices\" must be a non-empty list"},
      {R"({"version":1,"node":"n","containers":[{"name":"c","mode":"soft","devices":[]}]})",
       "\"mode\" \"soft\" (allowed: hard, elastic)"},
      {R"({"version":1,"node":"n","containers":[)"
       R"({"name":"c","devices":[{"uuid":"a","memoryMiB":1,"cores":0}]},)"
       R"({"name":"c","devices":[{"uuid":"b","memoryMiB":1,"cores":0}]}]})",
       "containers[1]: container c appears twice"},
      {with(R"({"memoryMiB":1,"cores":0})"), "devices[0]: field \"uuid\" is missing"},
      {with(R"({"uuid":"a","cores":0})"), "devices[0]: field \"memoryMiB\" is missing"},
      {with(R"({"uuid":"a","memoryMiB":1})"), "devices[0]: field \"cores\" is missing"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":101})"), "\"cores\" 101 (allowed: 0 to 100)"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":-1})"), "\"cores\" -1 (allowed: 0 to 100)"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":30,"coresLimit":20})", "elastic"),
       "devices[0]: coresLimit 20 (allowed: cores 30 to 100)"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":30,"coresLimit":101})"),
       "devices[0]: coresLimit 101 (allowed: cores 30 to 100)"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":0,"coresLimit":0})", "elastic"),
       "devices[0]: coresLimit 0 (allowed: cores 1 to 100)"},
      {with(R"({"uuid":"a","memoryMiB":1,"cores":0},{"uuid":"a","memoryMiB":1,"cores":0})"),
       "devices[1]: GPU a appears twice in one container"},
  };
  for (const Case& c : cases) {
    Result<Allocation> r = ParseAllocation(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.text << ": " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("tessera.io/allocation", 0), 0u) << r.status().message();
  }
}

TEST(Allocation, FindsAContainerByName) {
  Allocation a{"n",
               {{"a", false, Mode::kHard, {{"GPU-a", 1, 0, 0, false}}},
                {"b", true, Mode::kHard, {{"GPU-b", 1, 0, 0, false}}}}};
  ASSERT_NE(a.Find("b"), nullptr);
  EXPECT_EQ(a.Find("b")->devices[0].uuid, "GPU-b");
  EXPECT_EQ(a.Find("c"), nullptr);
}

TEST(Allocation, ComputeModeNames) {
  EXPECT_EQ(ParseComputeMode(ComputeModeName(Mode::kHard)), Mode::kHard);
  EXPECT_EQ(ParseComputeMode(ComputeModeName(Mode::kElastic)), Mode::kElastic);
  EXPECT_EQ(ParseComputeMode("Hard"), std::nullopt);
}

}  // namespace
}  // namespace tessera::annotations
