// Test helpers: a FakeApiServer per test and Clients connected to it. Test-only. Not thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "fakeapiserver/fake_api_server.h"
#include "kube/client.h"

namespace tessera::kube {

inline std::unique_ptr<testing::FakeApiServer> StartFakeServer(
    testing::FakeApiServer::Options options = {}) {
  auto server = testing::FakeApiServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

inline std::unique_ptr<Client> ClientFor(const testing::FakeApiServer& server,
                                         ClientOptions options = {.qps = 0}) {
  auto client = Client::Create(ConnectionConfig{.server = server.url(), .origin = "test"}, options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

inline Json PodObject(const std::string& ns, const std::string& name,
                      std::map<std::string, std::string> labels = {}) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"containers", Json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  return pod;
}

// Polls `condition` every 10 ms until it holds or `timeout` passes; returns its last value.
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace tessera::kube
