// HealthMonitor: keeps the DeviceBoard's health flags current. A GPU is unhealthy while it does
// not answer (it fell off the bus), and for `hold` after a critical Xid event; application Xids
// (13, 31, 43, 45, 68, 109: faults of a user's program, not of the GPU) are ignored. Changes reach
// the board, and from there every ListAndWatch stream, within one probe interval.
//
// The driver sits behind HealthProbe (NVML in production, a fake in tests). Start/Stop from one
// thread; the monitor runs on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "node/gpu/device_board.h"

namespace tessera::node {

struct XidEvent {
  std::string uuid;
  uint64_t xid = 0;
};

class HealthProbe {
 public:
  virtual ~HealthProbe() = default;
  // The next Xid event, or nullopt when none came within `timeout`.
  virtual std::optional<XidEvent> WaitXid(std::chrono::milliseconds timeout) = 0;
  // Whether the GPU answers.
  virtual bool Alive(const std::string& uuid) = 0;
};

// Xids caused by applications (the GPU is fine).
bool IsApplicationXid(uint64_t xid);

class HealthMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  HealthMonitor(HealthProbe& probe, DeviceBoard& board, std::chrono::milliseconds hold,
                std::chrono::milliseconds interval = std::chrono::milliseconds(250));
  ~HealthMonitor();

  void Start();
  void Stop();
  // One pass: the Xid event (if any) then a probe of every GPU. Exposed for tests.
  void Check(const std::optional<XidEvent>& event, Clock::time_point now);

 private:
  void Run();

  HealthProbe& probe_;
  DeviceBoard& board_;
  const std::chrono::milliseconds hold_;
  const std::chrono::milliseconds interval_;
  std::map<std::string, Clock::time_point> xid_until_;  // monitor thread only
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera::node
