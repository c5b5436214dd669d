// The admission webhook on pod creation: mutate's JSONPatch is applied before validate sees the
// pod, a denial is the real server's error (code, "denied the request: <message>") and stores
// nothing, an unreachable webhook fails the create (failurePolicy Fail), other kinds pass.
#include <chrono>
#include <mutex>
#include <thread>

#include "common/strings.h"
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// A webhook on a free port: /mutate sets spec.schedulerName, /validate denies pods named "bad"
// and records the schedulerName it saw.
class Webhook {
 public:
  Webhook() {
    server_.Post("/mutate", [](const httplib::Request& req, httplib::Response& res) {
      json review = json::parse(req.body);
      json patch =
          json::array({{{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", "tessera"}}});
      res.set_content(json{{"apiVersion", "admission.k8s.io/v1"},
                           {"kind", "AdmissionReview"},
                           {"response",
                            {{"uid", review["request"]["uid"]},
                             {"allowed", true},
                             {"patchType", "JSONPatch"},
                             {"patch", Base64Encode(patch.dump())}}}}
                          .dump(),
                      "application/json");
    });
    server_.Post("/validate", [this](const httplib::Request& req, httplib::Response& res) {
      json review = json::parse(req.body);
      const json& pod = review["request"]["object"];
      {
        std::lock_guard lock(mu_);
        seen_scheduler_ = pod["spec"].value("schedulerName", "");
      }
      json response = {{"uid", review["request"]["uid"]}, {"allowed", true}};
      if (pod["metadata"]["name"] == "bad") {
        response["allowed"] = false;
        response["status"] = {{"code", 403}, {"message", "vcuda-core 150 is not allowed"}};
      }
      res.set_content(json{{"apiVersion", "admission.k8s.io/v1"},
                           {"kind", "AdmissionReview"},
                           {"response", response}}
                          .dump(),
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 1000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~Webhook() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string seen_scheduler() {
    std::lock_guard lock(mu_);
    return seen_scheduler_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string seen_scheduler_;  // guarded by mu_
};

class AdmissionWebhookTest : public FakeApiServerTest {
 protected:
  void SetUp() override { StartServer({.admission_webhook = webhook_.url()}); }
  Webhook webhook_;
};

TEST_F(AdmissionWebhookTest, MutatesThenValidatesACreatedPod) {
  HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", PodJson("good"));
  ASSERT_EQ(a.status, 201) << a.body.dump();
  EXPECT_EQ(a.body["spec"]["schedulerName"], "tessera");
  EXPECT_EQ(webhook_.seen_scheduler(), "tessera");  // validate saw the mutated pod
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/good").body["spec"]["schedulerName"],
            "tessera");
}

TEST_F(AdmissionWebhookTest, DenialIsTheRealServersErrorAndStoresNothing) {
  HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", PodJson("bad"));
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(a.body["kind"], "Status");
  EXPECT_EQ(a.body["reason"], "Forbidden");
  EXPECT_EQ(a.body["message"],
            "admission webhook \"validate.tessera.io\" denied the request: vcuda-core 150 is not "
            "allowed");
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/bad").status, 404);
}

TEST_F(AdmissionWebhookTest, OtherKindsDoNotGoThroughTheWebhook) {
  HttpAnswer a = client_->Post(
      "/api/v1/nodes", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n"}}}});
  EXPECT_EQ(a.status, 201) << a.body.dump();
}

TEST_F(FakeApiServerTest, UnreachableWebhookFailsTheCreate) {
  StartServer({.admission_webhook = "http://127.0.0.1:1"});
  HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", PodJson("p"));
  EXPECT_EQ(a.status, 500);
  EXPECT_NE(
      a.body["message"].get<std::string>().find("failed calling webhook \"mutate.tessera.io\""),
      std::string::npos)
      << a.body.dump();
  EXPECT_EQ(client_->Get("/api/v1/namespaces/default/pods/p").status, 404);
}

}  // namespace
}  // namespace tessera::testing
