// OnTerminatingSignal: when SIGINT (Ctrl-C), SIGTERM or SIGHUP arrives, runs a cleanup on a thread
// of its own (not in the signal handler, so that it may start programs, wait and print), then ends
// the process with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). The handler only
// writes the signal's number to a pipe; the thread reads it. A signal that arrives while the
// cleanup runs is ignored, so that a second Ctrl-C does not cut the cleanup short.
//
//   OnTerminatingSignal([&](int sig) { cluster.Down(); });
//
// Thread-safety: call once per process, before starting other threads.
#pragma once

#include <functional>

namespace tessera::demo {

void OnTerminatingSignal(std::function<void(int signal)> cleanup);

}  // namespace tessera::demo
