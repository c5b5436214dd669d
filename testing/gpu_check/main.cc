// gpu_check: ground truth for Tessera's checks on a real NVIDIA GPU (issue 29). See options.cc
// for the usage, docs/compute-limit.md ("On a real GPU") and scripts/gpu-check, which runs it.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "mode_support.h"
#include "modes.h"
#include "options.h"

using namespace tessera::gpu_check;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  tessera::Result<Options> parsed = ParseOptions(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "gpu_check: %s\n\n%s", parsed.status().message().c_str(), kUsage);
    return kCannotRun;
  }
  const Options& o = *parsed;
  if (o.mode == "worker") return RunWorker(o);
  // A worker that died must not take this process with it when "go" is written to it.
  std::signal(SIGPIPE, SIG_IGN);
  Reporter r(o.mode, o.out);
  if (o.mode == "timeslice") return RunTimeslice(o, r);
  if (o.mode == "nvml") return RunNvml(o, r);
  if (o.mode == "events") return RunEvents(o, r);
  if (o.mode == "spread") return RunSpread(o, r);
  if (o.mode == "streams") return RunStreams(o, r);
  if (o.mode == "share") return RunShare(o, r);
  if (o.mode == "memory") return RunMemory(o, r);
  std::fprintf(stderr, "gpu_check: mode %s is not wired\n", o.mode.c_str());
  return kCannotRun;
}
