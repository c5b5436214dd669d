// Answers on reused connections come at once: clients (client-go, this project's src/kube) keep
// their connections, and a ~40 ms stall per request would slow every test and every caller.
#include "fakeapiserver/keep_alive_probe.h"
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

TEST_F(FakeApiServerTest, KeepAliveAnswersDoNotWaitForDelayedAcks) {
  CreatePod("p1");
  std::vector<double> ms =
      KeepAliveAnswerMillis(server_->port(), "/api/v1/namespaces/default/pods");
  ASSERT_EQ(ms.size(), 9u) << "the server closed a connection early";
  // With Nagle's algorithm on, every one of them takes 40 ms or more.
  EXPECT_LT(ms[ms.size() / 2], 20.0)
      << "median of " << ms.size() << " answers, slowest " << ms.back() << " ms";
}

}  // namespace
}  // namespace tessera::testing
