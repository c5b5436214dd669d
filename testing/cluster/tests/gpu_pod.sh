#!/usr/bin/env bash
# A pod of one request dialect (a file of examples/) on the real cluster: the admission webhook
# gives it to the `tessera` kube-scheduler, which places it through the extender (filter,
# prioritize, bind); kubelet admits it through Tessera's device plugin (Allocate,
# PreStartContainer) and containerd starts it with the CDI device and mounts the plugin gave. Its
# container runs tessera-demo-workload under libtessera-cuda.so over the node's simgpu, and the
# test checks what it saw against the pod's request.
#
#   gpu_pod.sh CLUSTER_DIR EXAMPLE MEMORY_MIB PERCENT|- MODEL
# PERCENT: the compute share it must be held to (at most 5 points over it; at least half of it,
# as the demo checks: on a loaded 2-core machine the program's own launches can fall behind, but
# the limit must never be exceeded); - when it has no limit.
source "$(dirname "$0")/lib.sh"
example=$2 memory_mib=$3 percent=$4 model=$5
pod=test-$(basename "$example" .yaml)

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
if ! out=$(example_pod "$example" "$pod" | k create -f - 2>&1); then
  fail "kubectl create of $example's pod: $out"
  finish
fi
check "the webhook gave the pod to the tessera scheduler" \
  test "$(k get pod "$pod" -o 'jsonpath={.spec.schedulerName}')" = tessera
check_completes "$pod" 180

node=$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')
scheduler=$(k get events --field-selector "involvedObject.name=$pod,reason=Scheduled" \
  -o 'jsonpath={.items[0].reportingComponent}')
check "kube-scheduler's tessera profile placed it (event from '$scheduler')" test "$scheduler" = tessera
allocation=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}')
check "the extender recorded its decision (tessera.io/allocation)" test -n "$allocation"
echo "  decision on $node: $allocation"
node_model=$(k get node "$node" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}' | grep -o '"model":"[^"]*"' | head -n1)
check "it runs on a node with $model GPUs ($node: $node_model)" grep -q "\"$model\"" <<<"$node_model"

logs=$(k logs "$pod" 2>&1 || true)
echo "$logs" | sed 's/^/  | /'
check "NVML in the container reports $memory_mib MiB as the GPU's memory" \
  test "$(value nvml.total_mib "$logs")" = "$memory_mib"
check "allocations stopped at the $memory_mib MiB limit" \
  test "$(value oom.allocated_mib "$logs")" = "$memory_mib"
check "the next allocation got CUDA_ERROR_OUT_OF_MEMORY (2)" test "$(value oom.error "$logs")" = 2
got=$(value compute.percent "$logs")
if [[ $percent != - ]]; then
  check "held to its $percent% compute share (got ${got:-nothing}%)" \
    python3 -c "import sys; g = float('${got:-0}'); sys.exit(0 if $percent / 2 <= g <= $percent + 5 else 1)"
fi
k delete pod "$pod" --wait=true >/dev/null
finish
