// `simgpu driver`: the daemon that stands in for a real driver's kernel module (protocol in
// driver_link.h). Run one per state directory, in the host's PID namespace. It listens on
// <state dir>/driver.sock (mode 0666; a stale socket is replaced, a live one is refused), answers
// each connection with the peer's host PID (SO_PEERCRED) and host /proc start time, and when the
// last connection of a process closes frees that process's memory and slot. Once a second it also
// sweeps, as processes without a daemon do, the slots of processes that died without ever having
// connected. One line per connection and disconnection goes to stderr.
//
// Thread-safety: single-threaded; it never waits for a client while it holds the state lock.
#pragma once

#include "shared_state.h"

namespace simgpu {

// Serves `state` until SIGTERM or SIGINT, then removes the socket. Returns the process's exit
// status: 0 after a signal, 1 when the socket cannot be set up or polling fails (said on
// stderr).
int RunDriverDaemon(SharedState& state);

}  // namespace simgpu
