// `simgpu`: inspect and steer the simulated machine of a state directory.
#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "driver_daemon.h"
#include "mig_state.h"
#include "shared_state.h"
#include "stat_json.h"

namespace {

constexpr const char* kUsage = R"(usage: simgpu COMMAND [ARGS]

Inspects and steers the simulated NVIDIA GPUs (libcuda.so.1 / libnvidia-ml.so.1 from
lib/simgpu) of one state directory.

Commands:
  stat                  print every device's memory and busy time as JSON
  reset                 clear the state directory (all memory, busy time and events)
  xid INDEX CODE        post an Xid error event (NVML) on device INDEX
  remove INDEX          the device falls off the bus: NVML reports it lost (and posts Xid 79)
  restore INDEX         bring a removed device back
  mig-minors            print the MIG capability minor numbers as the driver's
                        /proc/driver/nvidia-caps/mig-minors lists them
  reset-gpu INDEX       reset the GPU, as `nvidia-smi -r` does: a pending MIG mode takes effect
                        and every MIG instance is destroyed; refused while processes use it
  driver                run the driver daemon of the state directory in the foreground (as
                        root, in the host's PID namespace): processes, in containers too, are
                        then known by their host PIDs and freed when they exit; stops on SIGTERM

Environment:
  SIMGPU_STATE          state directory (default /dev/shm/simgpu-<uid>)
  SIMGPU_DEVICES        the machine, e.g. count=2,memory=16GiB,sms=108,model=SimGPU or
                        gpu=SimGPU-3090:24268MiB:82;gpu=SimGPU-H200:141GiB:132 (ctxmem=SIZE:
                        memory a context costs); used when the state is created
)";

bool ParseUint(std::string_view text, unsigned* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

int Reset() {
  std::string dir = simgpu::SharedState::DefaultDirectory();
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;  // nothing to clear
  int rc = 0;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "state" && name.rfind("state.tmp.", 0) != 0) continue;
    std::string path = dir + "/" + name;
    if (unlink(path.c_str()) != 0) {
      fprintf(stderr, "simgpu: cannot remove %s: %s\n", path.c_str(), strerror(errno));
      rc = 1;
    }
  }
  closedir(d);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "reset") return Reset();
  if (command == "driver") {
    if (argc != 2) {
      fprintf(stderr, "simgpu: 'driver' takes no arguments\n\n%s", kUsage);
      return 2;
    }
    // Opened, not attached: the daemon must not connect to the socket it serves.
    tessera::Result<simgpu::SharedState*> state = simgpu::SharedState::OpenFromEnvironment();
    if (!state.ok()) {
      fprintf(stderr, "simgpu: %s\n", state.status().message().c_str());
      return 1;
    }
    return simgpu::RunDriverDaemon(**state);
  }

  bool needs_index =
      command == "xid" || command == "remove" || command == "restore" || command == "reset-gpu";
  int want_args = command == "stat" || command == "mig-minors" ? 2
                  : command == "xid"                           ? 4
                  : needs_index                                ? 3
                                                               : -1;
  if (want_args < 0) {
    fprintf(stderr, "simgpu: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
  }
  if (argc != want_args) {
    fprintf(stderr, "simgpu: wrong number of arguments for '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
  }
  tessera::Result<simgpu::SharedState*> state = simgpu::SharedState::Attach();
  if (!state.ok()) {
    fprintf(stderr, "simgpu: %s\n", state.status().message().c_str());
    return 1;
  }
  simgpu::SharedState& s = **state;
  if (command == "stat") {
    printf("%s\n", simgpu::StatJson(s).c_str());
    return 0;
  }
  if (command == "mig-minors") {
    fputs(simgpu::MigMinorsTable(s.device_count()).c_str(), stdout);
    return 0;
  }
  unsigned index = 0;
  if (!ParseUint(argv[2], &index) || index >= static_cast<unsigned>(s.device_count())) {
    fprintf(stderr, "simgpu: device index '%s' is not one of 0..%d\n", argv[2],
            s.device_count() - 1);
    return 2;
  }
  simgpu::SharedState::Lock lock(s);
  simgpu::DeviceState& dev = s.file().devices[index];
  if (command == "xid") {
    unsigned code = 0;
    if (!ParseUint(argv[3], &code)) {
      fprintf(stderr, "simgpu: Xid code '%s' is not a non-negative number\n", argv[3]);
      return 2;
    }
    s.PostXid(lock, static_cast<int>(index), code);
  } else if (command == "reset-gpu") {
    tessera::Status reset = simgpu::ResetGpu(s, lock, static_cast<int>(index));
    if (!reset.ok()) {
      fprintf(stderr, "simgpu: %s\n", reset.message().c_str());
      return 1;
    }
  } else if (command == "remove") {
    if (!dev.removed) {
      dev.removed = 1;
      s.PostXid(lock, static_cast<int>(index), 79);  // "GPU has fallen off the bus"
    }
  } else {
    dev.removed = 0;
  }
  return 0;
}
