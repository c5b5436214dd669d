// DriverLink: a process's connection to the driver daemon (`simgpu driver`, driver_daemon.h), the
// stand-in for a real driver's kernel module. The daemon runs in the host's PID namespace, tells
// each connecting process its host PID and host /proc start time, and frees the process's memory
// when its connections close. A process in a container thus records its host identity in the
// state file, as the real driver knows it, and never has to judge whether other processes live.
//
// Protocol, on the unix stream socket <state dir>/driver.sock: the client connects and sends
// nothing; the daemon answers one line "simgpu-driver 1 pid=<host pid> start=<start time>\n"
// and keeps the connection until the client closes it (exit, or the library's shutdown).
//
// Thread-safety: Refresh() and identity() are safe from any thread; CloseInForkedChild() only in a
// child right after fork(), before it has other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"

namespace simgpu {

inline constexpr char kDriverSocketName[] = "driver.sock";

// A process as the host sees it: PID and /proc start time (clock ticks since boot).
struct HostIdentity {
  int pid = 0;
  uint64_t start_time = 0;
};

// The daemon's answer line for `id` (with the newline), and its parser.
std::string FormatDriverHello(const HostIdentity& id);
bool ParseDriverHello(std::string_view line, HostIdentity* id);

class DriverLink {
 public:
  // Connects to the daemon at `socket_path` and reads this process's host identity. Fails, saying
  // why and what to do, when nothing answers there.
  static tessera::Result<std::unique_ptr<DriverLink>> Connect(const std::string& socket_path);

  ~DriverLink();  // closes the connection: the daemon frees what the process still holds
  DriverLink(const DriverLink&) = delete;
  DriverLink& operator=(const DriverLink&) = delete;

  // Reconnects when the calling process is not the one that connected (a forked child must not
  // count as its parent, nor keep the parent's connection open). When that fails, says why on
  // stderr and the identity becomes {0, 0}. Never call it with the state lock held: the daemon
  // takes that lock to free processes.
  void Refresh();

  // The host identity of this process. Call Refresh() first.
  HostIdentity identity() const;

  // Closes the connection inherited from the parent; the next Refresh() connects anew.
  void CloseInForkedChild();

 private:
  explicit DriverLink(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  std::mutex mu_;                   // serialises reconnections
  int fd_ = -1;                     // guarded by mu_
  std::atomic<int> local_pid_{0};   // getpid() of the process that connected
  std::atomic<int> pid_{0};         // its host identity: written before local_pid_
  std::atomic<uint64_t> start_{0};  // (release), read after it (acquire)
};

}  // namespace simgpu
