// ClusterPod: a pod of examples/ as the dev cluster can run it, the same transformation as the
// cluster tests' `example_pod` (testing/cluster/tests/lib.sh). What Tessera reads stays as it is:
// the name, the annotations and every container's GPU requests. What this machine cannot give
// changes: each container's image becomes the cluster's workload image (the examples name CUDA
// images, which cannot be pulled here), its command the GPU program followed by a sleep (so that
// the pod stays Running and keeps its GPU share after the program has ended), and the cpu and
// memory requests and limits go (the examples ask for 4 CPUs and 32 GiB, more than this machine
// has). restartPolicy becomes Never, so that a failed program shows instead of restarting.
//
// Thread-safety: no shared state.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::demo {

inline constexpr char kWorkloadImage[] = "tessera.local/workload:dev";

// The command of every container: the program, its exit status, then a sleep.
std::vector<std::string> WorkloadCommand();

// `pod` as `kubectl create --dry-run=client -o json -f examples/X` prints it, changed as above.
// Returns `pod` unchanged when it is not a pod with containers.
nlohmann::json ClusterPod(nlohmann::json pod);

}  // namespace tessera::demo
