// OnTerminatingSignal: when SIGINT (Ctrl-C), SIGTERM or SIGHUP arrives, runs a cleanup on a thread
// of its own (not in the signal handler, so that it may start programs, wait and print), then ends
// the process with 128 + the signal's number. A signal that arrives while the cleanup runs is
// ignored. The cleanup's objects must outlive it: before they go away, the main thread calls
// EndSignalCleanup, which blocks for good when a cleanup has begun (the cleanup ends the process)
// and otherwise makes a later signal end the process at once, without the cleanup.
//
//   OnTerminatingSignal([&](int sig) { cluster.Down(); });
//   ...
//   EndSignalCleanup();  // before `cluster` is destroyed, on every path
//
// Thread-safety: call OnTerminatingSignal once per process, before starting other threads.
// Why: docs/demo.md, "How it is wired" (Signals).
#pragma once

#include <functional>

namespace tessera::demo {

void OnTerminatingSignal(std::function<void(int signal)> cleanup);

void EndSignalCleanup();

// Calls EndSignalCleanup when it goes out of scope: declared after the objects the cleanup uses,
// it runs before they are destroyed, whichever way the scope is left.
struct SignalCleanupScope {
  SignalCleanupScope() = default;
  SignalCleanupScope(const SignalCleanupScope&) = delete;
  SignalCleanupScope& operator=(const SignalCleanupScope&) = delete;
  ~SignalCleanupScope() { EndSignalCleanup(); }
};

}  // namespace tessera::demo
