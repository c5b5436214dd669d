// Bad requests get the real server's Status answers: 400, 404, 405, 422.
#include <set>

#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

const std::string kPods = "/api/v1/namespaces/default/pods";

void ExpectStatus(const HttpAnswer& a, int code, const std::string& reason) {
  EXPECT_EQ(a.status, code) << a.body.dump();
  EXPECT_EQ(a.body["kind"], "Status");
  EXPECT_EQ(a.body["apiVersion"], "v1");
  EXPECT_EQ(a.body["status"], "Failure");
  EXPECT_EQ(a.body["code"], code);
  EXPECT_EQ(a.body["reason"], reason);
  EXPECT_FALSE(a.body["message"].get<std::string>().empty());
}

TEST_F(FakeApiServerTest, MalformedJsonIsBadRequest) {
  HttpAnswer truncated = client_->Post(kPods, std::string("{\"metadata\": "));
  ExpectStatus(truncated, 400, "BadRequest");
  EXPECT_EQ(truncated.body["message"],
            "the object provided is unrecognized (must be of type Pod): couldn't get "
            "version/kind; json parse error: the request body is not valid JSON "
            "({\"metadata\": )");
  // Data that is not an object is quoted in hex, as the real server does.
  HttpAnswer array = client_->Post(kPods, std::string("[1,2]"));
  ExpectStatus(array, 400, "BadRequest");
  EXPECT_NE(array.body["message"].get<std::string>().find("must be of type Pod"),
            std::string::npos);
  EXPECT_NE(array.body["message"].get<std::string>().find("(5b312c325d)"), std::string::npos);
}

// The real server decodes the body as the kind it names and fails to convert it: 400, not 422.
TEST_F(FakeApiServerTest, WrongKindIsBadRequest) {
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "x"}}}};
  HttpAnswer a = client_->Post(kPods, node);
  ExpectStatus(a, 400, "BadRequest");
  EXPECT_EQ(a.body["message"],
            "Node in version \"v1\" cannot be handled as a Pod: converting (v1.Node) to "
            "(core.Pod): unknown conversion");
  json widget = {{"apiVersion", "v1"}, {"kind", "Widget"}, {"metadata", {{"name", "x"}}}};
  a = client_->Post(kPods, widget);
  ExpectStatus(a, 400, "BadRequest");
  EXPECT_EQ(a.body["message"],
            "Widget in version \"v1\" cannot be handled as a Pod: no kind \"Widget\" is "
            "registered for version \"v1\"");
  EXPECT_EQ(client_->Get(kPods + "/x").status, 404) << "nothing was stored";
}

TEST_F(FakeApiServerTest, MissingNameIsInvalid) {
  json pod = PodJson("x");
  pod["metadata"].erase("name");
  HttpAnswer a = client_->Post(kPods, pod);
  ExpectStatus(a, 422, "Invalid");
  EXPECT_EQ(a.body["message"],
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is "
            "required");
  EXPECT_EQ(a.body["details"]["causes"][0]["reason"], "FieldValueRequired");
}

TEST_F(FakeApiServerTest, InvalidNameIsInvalid) {
  ExpectStatus(client_->Post(kPods, PodJson("Upper_Case")), 422, "Invalid");
}

TEST_F(FakeApiServerTest, WrongApiVersionOrNamespaceIsBadRequest) {
  json pod = PodJson("p1");
  pod["apiVersion"] = "v2";
  ExpectStatus(client_->Post(kPods, pod), 400, "BadRequest");
  pod = PodJson("p1");
  pod["metadata"]["namespace"] = "kube-system";
  ExpectStatus(client_->Post(kPods, pod), 400, "BadRequest");
}

TEST_F(FakeApiServerTest, UnknownPathsAndMethods) {
  ExpectStatus(client_->Get("/api/v1/widgets"), 404, "NotFound");
  ExpectStatus(client_->Get("/apis/apps/v1"), 404, "NotFound");
  ExpectStatus(client_->Delete("/api/v1/namespaces/default/pods"), 405, "MethodNotAllowed");
  ExpectStatus(client_->Post("/api/v1", std::string("{}")), 405, "MethodNotAllowed");
}

TEST_F(FakeApiServerTest, BadQueryParametersAreBadRequests) {
  ExpectStatus(client_->Get(kPods + "?limit=-1"), 400, "BadRequest");
  ExpectStatus(client_->Get(kPods + "?labelSelector=a%20in%20b"), 400, "BadRequest");
  ExpectStatus(client_->Get(kPods + "?watch=1&resourceVersion=abc"), 400, "BadRequest");
}

TEST_F(FakeApiServerTest, DiscoveryDescribesTheServedTypes) {
  HttpAnswer api = client_->Get("/api");
  EXPECT_EQ(api.body["versions"], json::array({"v1"}));
  HttpAnswer v1 = client_->Get("/api/v1");
  ASSERT_EQ(v1.status, 200);
  std::set<std::string> names;
  for (const json& r : v1.body["resources"]) names.insert(r["name"].get<std::string>());
  for (const char* n : {"pods", "pods/status", "pods/binding", "nodes", "namespaces", "events"}) {
    EXPECT_TRUE(names.contains(n)) << n;
  }
  HttpAnswer groups = client_->Get("/apis");
  EXPECT_EQ(groups.body["groups"][0]["name"], "coordination.k8s.io");
  HttpAnswer leases = client_->Get("/apis/coordination.k8s.io/v1");
  EXPECT_EQ(leases.body["resources"][0]["name"], "leases");
  EXPECT_EQ(client_->Get("/version").body["major"], "1");
  HttpAnswer openapi = client_->Get("/openapi/v3");
  EXPECT_TRUE(openapi.body["paths"].contains("api/v1"));
  EXPECT_EQ(client_->Get("/openapi/v3/api/v1").status, 200);
}

}  // namespace
}  // namespace tessera::testing
