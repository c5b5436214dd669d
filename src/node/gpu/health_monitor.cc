#include "node/gpu/health_monitor.h"

#include "log/log.h"

namespace tessera::node {

bool IsApplicationXid(uint64_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return true;
    default:
      return false;
  }
}

HealthMonitor::HealthMonitor(HealthProbe& probe, DeviceBoard& board, std::chrono::milliseconds hold,
                             std::chrono::milliseconds interval)
    : probe_(probe), board_(board), hold_(hold), interval_(interval) {}

HealthMonitor::~HealthMonitor() {
  Stop();
}

void HealthMonitor::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void HealthMonitor::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void HealthMonitor::Check(const std::optional<XidEvent>& event, Clock::time_point now) {
  if (event) {
    if (IsApplicationXid(event->xid)) {
      log::Debug("application Xid ignored",
                 {{"gpu", event->uuid}, {"xid", std::to_string(event->xid)}});
    } else {
      log::Warn("critical Xid: GPU marked unhealthy",
                {{"gpu", event->uuid}, {"xid", std::to_string(event->xid)}});
      xid_until_[event->uuid] = now + hold_;
    }
  }
  for (const GpuInfo& g : board_.Get().gpus) {
    auto it = xid_until_.find(g.uuid);
    bool held = it != xid_until_.end() && now < it->second;
    bool healthy = !held && probe_.Alive(g.uuid);
    if (healthy != g.healthy) {
      log::Info(healthy ? "GPU healthy again" : "GPU unhealthy",
                {{"gpu", g.uuid}, {"reason", held ? "xid" : (healthy ? "answers" : "gone")}});
      board_.SetHealthy(g.uuid, healthy);
    }
  }
}

void HealthMonitor::Run() {
  auto next_probe = Clock::now();
  while (!stop_) {
    auto now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_probe - now);
    std::optional<XidEvent> event =
        probe_.WaitXid(std::max(std::chrono::milliseconds(0), std::min(wait, interval_)));
    now = Clock::now();
    if (event || now >= next_probe) {
      Check(event, now);
      if (now >= next_probe) next_probe = now + interval_;
    }
  }
}

}  // namespace tessera::node
