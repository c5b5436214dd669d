#include "demo/signal_cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace tessera::demo {
namespace {

int signal_pipe[2] = {-1, -1};

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
    cleanup(sig);
    ::_exit(128 + sig);
  }).detach();
  struct sigaction sa = {};
  sa.sa_handler = Handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

}  // namespace tessera::demo
