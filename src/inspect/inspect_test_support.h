// What the inspect tests share: the keys `kubectl tessera` reads, as its program registers them,
// the result of one run of a command, and a fixture with a fake API server and a client of it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "config/schema.h"
#include "fakeapiserver/fake_api_server.h"
#include "inspect/inspect_command.h"
#include "kube/client.h"
#include "kube/config_keys.h"

namespace tessera::inspect {

inline const config::Schema& InspectTestSchema() {
  static const config::Schema schema = [] {
    config::Schema s;
    config::AddCommonKeys(s);
    kube::AddConfigKeys(s);
    AddInspectKeys(s);
    return s;
  }();
  return schema;
}

struct InspectRun {
  int code = -1;
  std::string out, err;
};

// Starts a fake API server and a client of it before each test; fixtures add their objects in
// their SetUp after calling this one.
class FakeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::FakeApiServer::Start({});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto client = kube::Client::Create({.server = server_->url()});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
};

}  // namespace tessera::inspect
