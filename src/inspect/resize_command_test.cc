// `kubectl tessera resize` against the fake API server: its flags and their errors, the request it
// writes, and the scheduler's answer it waits for and prints (a thread stands in for the
// scheduler here; the scheduler's side is scheduler_resize_test and scheduler_e2e_test).
#include "inspect/resize_command.h"

#include <atomic>
#include <thread>

#include "annotations/names.h"
#include "annotations/resize.h"
#include "inspect/inspect_test_support.h"
#include "kube/resource.h"

namespace tessera::inspect {
namespace {

using Json = nlohmann::json;

const config::Schema& ResizeSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    config::AddCommonKeys(s);
    kube::AddConfigKeys(s);
    AddInspectKeys(s);
    AddResizeKeys(s);
    return s;
  }();
  return schema;
}

class ResizeCommandTest : public FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    if (HasFatalFailure()) return;
    Json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "p"},
                  {"namespace", "default"},
                  {"annotations",
                   {{annotations::kAllocation,
                     R"({"version":1,"node":"n","containers":[{"name":"main","mode":"hard",)"
                     R"("devices":[{"uuid":"GPU-a","memoryMiB":4096,"cores":30}]}]})"}}}}},
                {"spec", {{"nodeName", "n"}, {"containers", {{{"name", "main"}}}}}}};
    ASSERT_TRUE(client_->Create(kube::kPods, "default", pod).ok());
    Json bare = pod;
    bare["metadata"]["name"] = "bare";
    bare["metadata"].erase("annotations");
    ASSERT_TRUE(client_->Create(kube::kPods, "default", bare).ok());
  }
  InspectRun Resize(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->url()});
    Result<config::Loaded> loaded = config::Load(ResizeSchema(), args, {});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) return {};
    std::ostringstream out, err;
    InspectRun run;
    run.code = RunResize(loaded->config, loaded->positional, {}, out, err);
    run.out = out.str();
    run.err = err.str();
    return run;
  }
  std::string Annotation(const std::string& pod, const char* key) {
    Result<Json> got = client_->Get(kube::kPods, "default", pod);
    if (!got.ok()) return "";
    return got->at("metadata").value("annotations", Json::object()).value(key, "");
  }
  // Answers the next request on pod p as the scheduler would.
  std::thread Scheduler(bool granted) {
    return std::thread([this, granted] {
      for (int i = 0; i < 500; ++i) {
        Result<annotations::ResizeRequest> r =
            annotations::ParseResizeRequest(Annotation("p", annotations::kResize));
        Result<annotations::ResizeStatus> answered =
            annotations::ParseResizeStatus(Annotation("p", annotations::kResizeStatus));
        if (r.ok() && !(answered.ok() && answered->id == r->id)) {
          kube::StringMapChanges answer;
          answer[annotations::kResizeStatus] = annotations::ResizeStatusToJson(
              {.id = r->id,
               .container = r->container,
               .granted = granted,
               .memory_mib = granted ? *r->memory_mib : 4096,
               .cores = 30,
               .message = granted ? "container \"main\" resized from 4096 MiB and 30% cores per "
                                    "GPU to 8192 MiB and 30% cores per GPU on node n"
                                  : "container \"main\": insufficient GPU memory: need 8192 MiB "
                                    "on 1 GPU, largest free 6000 MiB (GPU 0, L4)"});
          (void)client_->PatchAnnotations(kube::kPods, "default", "p", answer);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
};

TEST_F(ResizeCommandTest, BadArgumentsSayWhatIsAllowed) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--memory", "8Gi"}, "name the pod (pod/NAME)"},
      {{"deploy/x", "--memory", "8Gi"}, "\"deploy/x\" is not a pod: give pod/NAME"},
      {{"pod/p"}, "give --memory, --cores or both"},
      {{"pod/p", "--memory", "8G5"}, "--memory 8G5: "},
      {{"pod/p", "--memory", "1000"}, "give the memory per GPU in whole MiB"},
      {{"pod/p", "--cores", "150"},
       "--cores 150 is not allowed: compute percent per GPU, 1 to 100"},
      {{"pod/p", "--cores", "4x"}, "--cores 4x is not allowed"},
  };
  for (const Case& c : cases) {
    InspectRun run = Resize(c.args);
    EXPECT_EQ(run.code, 2) << run.err;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("usage: kubectl tessera resize pod/NAME"), std::string::npos);
  }
  InspectRun bare = Resize({"pod/bare", "--cores", "40"});
  EXPECT_EQ(bare.code, 1);
  EXPECT_NE(bare.err.find("pod default/bare has no Tessera decision"), std::string::npos)
      << bare.err;
  InspectRun missing = Resize({"pod/nope", "--cores", "40"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("pod default/nope: "), std::string::npos) << missing.err;
}

TEST_F(ResizeCommandTest, WritesTheRequestAndWithoutWaitingSaysSo) {
  InspectRun run = Resize({"pod/p", "--memory", "8Gi", "--cores", "40", "--wait", "0"});
  EXPECT_EQ(run.code, 0) << run.err;
  Result<annotations::ResizeRequest> r =
      annotations::ParseResizeRequest(Annotation("p", annotations::kResize));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->container, "main");
  EXPECT_EQ(r->memory_mib, 8192u);
  EXPECT_EQ(r->cores, 40);
  EXPECT_EQ(r->id.size(), 16u);
  EXPECT_EQ(run.out, "pod/p: resize " + r->id + " requested\n");
}

TEST_F(ResizeCommandTest, PrintsWhatWasGrantedOrWhyNot) {
  std::thread granting = Scheduler(true);
  InspectRun run = Resize({"pod/p", "-c", "main", "--memory", "8Gi", "--wait", "10s"});
  granting.join();
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "pod/p resized: container \"main\" resized from 4096 MiB and 30% cores per GPU to "
            "8192 MiB and 30% cores per GPU on node n\n");

  std::thread refusing = Scheduler(false);
  run = Resize({"pod/p", "--memory", "8Gi", "--wait", "10s"});
  refusing.join();
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "kubectl tessera resize: pod/p: resize refused: container \"main\": insufficient GPU "
            "memory: need 8192 MiB on 1 GPU, largest free 6000 MiB (GPU 0, L4)\n");

  run = Resize({"pod/p", "--cores", "50", "--wait", "300ms"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("no answer from the Tessera scheduler within resize.wait \"300ms\""),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace tessera::inspect
