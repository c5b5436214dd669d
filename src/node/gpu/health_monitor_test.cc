#include "node/gpu/health_monitor.h"

#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "node/test_support.h"

namespace tessera::node {
namespace {

class FakeProbe : public HealthProbe {
 public:
  std::optional<XidEvent> WaitXid(std::chrono::milliseconds) override { return std::nullopt; }
  bool Alive(const std::string& uuid) override {
    std::lock_guard lock(mu);
    return gone.count(uuid) == 0;
  }
  void SetGone(std::set<std::string> g) {
    std::lock_guard lock(mu);
    gone = std::move(g);
  }
  std::mutex mu;
  std::set<std::string> gone;
};

TEST(HealthMonitorTest, ApplicationXidsAreIgnored) {
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) EXPECT_TRUE(IsApplicationXid(xid)) << xid;
  for (uint64_t xid : {48, 63, 64, 74, 79, 92, 94, 95}) EXPECT_FALSE(IsApplicationXid(xid)) << xid;
}

TEST(HealthMonitorTest, CriticalXidHoldsThenRecovers) {
  FakeProbe probe;
  DeviceBoard board;
  board.Set(testing::TestGpus(2));
  HealthMonitor monitor(probe, board, std::chrono::seconds(10));
  auto t0 = HealthMonitor::Clock::now();
  monitor.Check(XidEvent{"GPU-1", 43}, t0);
  EXPECT_TRUE(board.Get().gpus[1].healthy);
  monitor.Check(XidEvent{"GPU-1", 79}, t0);
  EXPECT_FALSE(board.Get().gpus[1].healthy);
  EXPECT_TRUE(board.Get().gpus[0].healthy);
  monitor.Check(std::nullopt, t0 + std::chrono::seconds(5));
  EXPECT_FALSE(board.Get().gpus[1].healthy);
  monitor.Check(std::nullopt, t0 + std::chrono::seconds(11));
  EXPECT_TRUE(board.Get().gpus[1].healthy);
}

TEST(HealthMonitorTest, VanishedGpuIsUnhealthyUntilItAnswers) {
  FakeProbe probe;
  DeviceBoard board;
  board.Set(testing::TestGpus(2));
  HealthMonitor monitor(probe, board, std::chrono::seconds(10), std::chrono::milliseconds(20));
  monitor.Start();
  uint64_t v = board.Get().version;
  probe.SetGone({"GPU-0"});
  board.WaitChange(v, std::chrono::seconds(5));
  EXPECT_FALSE(board.Get().gpus[0].healthy);
  v = board.Get().version;
  probe.SetGone({});
  board.WaitChange(v, std::chrono::seconds(5));
  EXPECT_TRUE(board.Get().gpus[0].healthy);
  monitor.Stop();
}

}  // namespace
}  // namespace tessera::node
