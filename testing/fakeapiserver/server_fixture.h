// A GoogleTest fixture that starts a FakeApiServer on a free port for each test. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "fakeapiserver/fake_api_server.h"
#include "fakeapiserver/test_client.h"

namespace tessera::testing {

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(const FakeApiServer::Options& options) {
    server_.reset();
    auto started = FakeApiServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(*started);
    client_ = std::make_unique<TestClient>(server_->url());
  }

  // Creates pod `name` in "default" and returns it (fails the test otherwise).
  nlohmann::json CreatePod(const std::string& name, const nlohmann::json& labels = nullptr) {
    HttpAnswer a = client_->Post("/api/v1/namespaces/default/pods", PodJson(name, labels));
    EXPECT_EQ(a.status, 201) << a.body.dump();
    return a.body;
  }

  static std::string Rv(const nlohmann::json& object) {
    return object["metadata"]["resourceVersion"].get<std::string>();
  }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<TestClient> client_;
};

}  // namespace tessera::testing
