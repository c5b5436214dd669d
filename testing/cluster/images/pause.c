/* tessera-pause: the pod sandbox process of the test cluster (what registry.k8s.io/pause is on a
 * production one). It holds the pod's namespaces, reaps the zombies of a shared PID namespace, and
 * ends at once on SIGTERM or SIGINT, which PID 1 would otherwise ignore. Linked statically: the
 * pause image holds nothing else. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void leave(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction end = {.sa_handler = leave};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  sigaction(SIGTERM, &end, NULL);
  sigaction(SIGINT, &end, NULL);
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
