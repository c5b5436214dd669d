// What the inspect tests share: the keys `kubectl tessera` reads, as its program registers them,
// the result of one run of a command, and a fixture with a fake API server and a client of it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "config/schema.h"
#include "fakeapiserver/fake_api_server.h"
#include "inspect/inspect_command.h"
#include "kube/client.h"
#include "kube/config_keys.h"
#include "kube/fake_server_for_test.h"

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

// Loads `args` with InspectTestSchema and runs `command(config, positional, out, err)`, which
// returns the exit code.
template <typename Command>
InspectRun RunWithArgs(const std::vector<std::string>& args, Command command) {
  Result<config::Loaded> loaded = config::Load(InspectTestSchema(), args, {});
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return {};
  std::ostringstream out, err;
  InspectRun run;
  run.code = command(loaded->config, loaded->positional, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

// Starts a fake API server and a client of it before each test; fixtures add their objects in
// their SetUp after calling this one.
class FakeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = kube::StartFakeServer();
    ASSERT_NE(server_, nullptr);
    client_ = kube::ClientFor(*server_);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
};

}  // namespace tessera::inspect
