#!/usr/bin/env bash
# The node agent's host-side memory check on the real cluster (node.memory-guard.*, action kill):
# a container that lifts its own accounting (it zeroes its shared region) or that bypasses
# libtessera-cuda.so (its own copy of libcuda.so.1 in a new link namespace) takes more GPU memory
# than its limit. The agent sees it in the driver's per-process figures, kills the process and
# records a Warning event, and the neighbour on the same GPU still gets its whole share.
source "$(dirname "$0")/lib.sh"

net=$(sed -n 's/^declare -- net="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
spec='{"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
       "nodeSelector": {"kubernetes.io/hostname": "node-a"}}'

# gpu_of POD: the UUID of the GPU its allocation names.
gpu_of() {
  k get pod "$1" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}' |
    grep -o '"uuid":"[^"]*"' | head -n1
}

# attack MODE: a hostile container running tessera-hostile-workload MODE (limit 4096 MiB) beside
# a neighbour (limit 8192 MiB) that starts allocating once the hostile one has had its chance.
attack() {
  local mode=$1 hostile=guard-$1 neighbour=guard-$1-neighbour
  k delete pod "$hostile" "$neighbour" --ignore-not-found --wait=true >/dev/null
  workload_pod "$neighbour" "$spec" main '{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8192}' \
    "exec tessera-hostile-workload fill-after 40" | k create -f - >/dev/null
  wait_phase "$neighbour" 120 Running >/dev/null || true
  workload_pod "$hostile" "$spec" main '{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096}' \
    "exec tessera-hostile-workload $mode" | k create -f - >/dev/null
  local phase
  phase=$(wait_phase "$hostile" 120 Failed Succeeded) || true
  check "$mode: the hostile container was ended (phase $phase)" test "$phase" = Failed
  [[ $phase == Failed ]] || describe_pod "$hostile"
  check "$mode: both pods are on one GPU ($(gpu_of "$hostile"))" \
    test "$(gpu_of "$hostile")" = "$(gpu_of "$neighbour")"
  local logs got code started finished
  logs=$(k logs "$hostile" 2>&1 || true)
  echo "$logs" | sed 's/^/  | /'
  got=$(value hostile.allocated_mib "$logs")
  check "$mode: it held more than its 4096 MiB limit ($got MiB): the library alone did not stop it" \
    test "${got:-0}" -gt 4096
  code=$(k get pod "$hostile" -o 'jsonpath={.status.containerStatuses[0].state.terminated.exitCode}')
  check "$mode: its process was killed (exit code $code; SIGKILL is 137)" test "$code" = 137
  started=$(k get pod "$hostile" -o 'jsonpath={.status.containerStatuses[0].state.terminated.startedAt}')
  finished=$(k get pod "$hostile" -o 'jsonpath={.status.containerStatuses[0].state.terminated.finishedAt}')
  echo "  $mode: container started $started, killed $finished" \
    "($(($(date -d "$finished" +%s) - $(date -d "$started" +%s))) s; check every 2 s, 2 checks)"
  local event
  event=$(k get events --field-selector "involvedObject.name=$hostile,reason=GPUMemoryOverLimit" \
    -o 'jsonpath={.items[*].message}' 2>/dev/null || true)
  echo "  event: $event"
  check "$mode: a GPUMemoryOverLimit event says what it held" \
    grep -q "over its limit of 4096 MiB (as the driver reports its processes); killed host PIDs: [0-9]" <<<"$event"
  phase=$(wait_phase "$neighbour" 120 Succeeded Failed) || true
  logs=$(k logs "$neighbour" 2>&1 || true)
  echo "$logs" | sed 's/^/  | /'
  check "$mode: the neighbour on the same GPU still got its whole 8192 MiB" \
    test "$(value fill.allocated_mib "$logs")" = 8192
  k delete pod "$hostile" "$neighbour" --wait=true >/dev/null
}

attack zero-region
attack bypass
metrics=$(curl -s --max-time 5 "http://10.$net.0.11:9394/metrics" || true)
kills=$(sed -n 's/^tessera_node_memory_guard_kills_total //p' <<<"$metrics")
check "node-a's agent counts the kills (tessera_node_memory_guard_kills_total ${kills:-none})" \
  test "${kills:-0}" -ge 2
finish
