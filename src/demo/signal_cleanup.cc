#include "demo/signal_cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace tessera::demo {
namespace {

int signal_pipe[2] = {-1, -1};

// kArmed until a signal's cleanup begins (kCleaning) or the main thread ends it (kEnded).
enum State { kArmed, kCleaning, kEnded };
std::atomic<int> state{kArmed};

void Handler(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  // A full pipe means a signal is already waiting to be handled: nothing is lost.
  [[maybe_unused]] ssize_t n = ::write(signal_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

void OnTerminatingSignal(std::function<void(int signal)> cleanup) {
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  // The reading end blocks; only the handler's end must never block.
  ::fcntl(signal_pipe[0], F_SETFL, 0);
  std::thread([cleanup = std::move(cleanup)] {
    unsigned char sig = 0;
    ssize_t n;
    while ((n = ::read(signal_pipe[0], &sig, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) return;  // cannot happen: the writing end stays open
    int armed = kArmed;
    // Ended: the objects the cleanup would use are going away, and the main thread's own path
    // took the cluster down.
    if (state.compare_exchange_strong(armed, kCleaning)) cleanup(sig);
    ::_exit(128 + sig);
  }).detach();
  struct sigaction sa = {};
  sa.sa_handler = Handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

void EndSignalCleanup() {
  int armed = kArmed;
  if (state.compare_exchange_strong(armed, kEnded)) return;
  if (armed == kEnded) return;
  // A cleanup runs, and ends the process: its objects must stay.
  for (;;) ::pause();
}

}  // namespace tessera::demo
