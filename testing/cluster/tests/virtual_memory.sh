#!/usr/bin/env bash
# Virtual device memory on the real cluster (issue 33; docs/node-agent.md, "Virtual device
# memory"; docs/in-container-library.md, "Memory beyond the device (spill)"): node-a rebooted with
# node.device-memory-scaling=2 and small simulated GPUs, then the issue's three cases. The issue
# speaks of two 20 GiB pods on a 24 GiB GPU; simgpu's host memory is real memory and this machine
# has 23 GiB in all, so the test keeps the proportions on a 4096 MiB GPU (8192 MiB virtual) with
# pods of 3412 MiB (20/24 of it, 3413, rounded down to the 2 MiB granule the library charges in):
#  1. two such pods on the one GPU (nvidia.com/use-gpuuuid) both run a job that touches all of
#     their memory (`tessera-demo-workload --fill`, src/demo/workload_spill.cc) while the other
#     holds its own; the second spills what the device cannot hold, the device never holds more
#     than it has, the agent's metrics show the spilled bytes, kernels read host memory slower;
#  2. a pod of 6144 MiB alone on the other GPU (more than the GPU, less than its virtual memory)
#     sees its 6144 MiB as the total and fills exactly that: the next allocation gets
#     CUDA_ERROR_OUT_OF_MEMORY (2);
#  3. a pod whose memory limit (1 GiB) cannot hold the spill it would need, beside a neighbour that
#     filled the device first: its allocation fails with CUDA_ERROR_OUT_OF_MEMORY, it exits
#     normally (not OOMKilled), and the neighbour finishes its job.
# At the end node-a is rebooted again with the GPUs and settings of `up`.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
node=node-a
gpu_mib=4096
scaled_gpus="count=2,memory=${gpu_mib}MiB,sms=82,model=SimGPU-3090"
pod_mib=3412
pods=(vm-first vm-second vm-limit vm-neighbour vm-small)
release=/dev/shm/release

delete_pods() { k delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null 2>&1 || true; }
restore() {
  delete_pods
  "$harness" reboot --dir "$cluster_dir" "$node" >/dev/null ||
    { echo "FAIL: $node's reboot with the GPUs and settings of up"; exit 1; }
}
trap restore EXIT
delete_pods
DEV_CLUSTER_NODE_GPUS=$scaled_gpus DEV_CLUSTER_AGENT_ENV=TESSERA_NODE_DEVICE_MEMORY_SCALING=2 \
  "$harness" reboot --dir "$cluster_dir" "$node" >/dev/null

# scaled_inventory: the node's published GPUs are the small ones, scaled 2 (the annotation of the
# boot before may still be there a moment after the reboot).
scaled_inventory() {
  inventory=$(k get node "$node" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}')
  python3 -c '
import json, sys
gpus = json.loads(sys.argv[1])["gpus"]
sys.exit(0 if gpus and all(g["memoryMiB"] == int(sys.argv[2]) and g.get("memoryScaling") == 2 for g in gpus) else 1)' \
    "$inventory" "$gpu_mib"
}
for _ in $(seq 60); do scaled_inventory && break; sleep 0.5; done
check "$node publishes $gpu_mib MiB GPUs with memoryScaling 2" scaled_inventory
uuid_of() {
  python3 -c 'import json, sys; print({g["index"]: g["uuid"] for g in json.loads(sys.argv[1])["gpus"]}[int(sys.argv[2])])' \
    "$inventory" "$1"
}
gpu0=$(uuid_of 0)
gpu1=$(uuid_of 1)
node_ip=$(k get node "$node" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')

# fill_pod POD UUID GPU_MIB MEMORY ARGS...: a pod on the GPU of UUID with a limit of GPU_MIB MiB and
# the memory limit MEMORY that runs `tessera-demo-workload --fill ARGS...`.
fill_pod() {
  local pod=$1 uuid=$2 mib=$3 memory=$4
  shift 4
  workload_pod "$pod" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"restartPolicy\":\"Never\"}" \
    main "{\"nvidia.com/gpu\":1,\"nvidia.com/gpumem\":$mib,\"memory\":\"$memory\"}" \
    "exec tessera-demo-workload --fill $*" |
    python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["annotations"] = {"nvidia.com/use-gpuuuid": sys.argv[1]}
print(json.dumps(pod))' "$uuid" | k create -f - >/dev/null
}

# wait_holding POD: waits until the pod's job holds its memory (fill.holding=1), or it ended.
wait_holding() {
  local deadline=$((SECONDS + 180)) phase
  while ((SECONDS < deadline)); do
    grep -q '^fill.holding=1$' <<<"$(k logs "$1" 2>/dev/null)" && return 0
    phase=$(k get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
    [[ $phase == Succeeded || $phase == Failed ]] && break
    sleep 1
  done
  describe_pod "$1"
  return 1
}

logs_of() {
  local logs
  logs=$(k logs "$1" 2>&1 || true)
  echo "$logs" | sed "s/^/  $1 | /" >&2
  echo "$logs"
}

# spilled_metric POD: the agent's tessera_container_memory_spilled_bytes of the pod's container.
spilled_metric() {
  curl -sf --max-time 5 "http://$node_ip:9394/metrics" |
    sed -n "s/^tessera_container_memory_spilled_bytes{.*pod=\"$1\".*} //p" | head -n1
}

# terminated POD: the container's terminated reason and exit code, and its restart count.
terminated() {
  k get pod "$1" -o 'jsonpath={.status.containerStatuses[0].state.terminated.reason}/{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].restartCount}'
}

echo "== 1. two pods of $pod_mib MiB on one $gpu_mib MiB GPU (scaling 2: $((2 * gpu_mib)) MiB virtual)"
fill_pod vm-first "$gpu0" "$pod_mib" 4Gi "$pod_mib --wait $release"
check "the first pod holds its $pod_mib MiB" wait_holding vm-first
fill_pod vm-second "$gpu0" "$pod_mib" 4Gi "$pod_mib --create --wait $release"
check "the second pod holds its $pod_mib MiB beside it" wait_holding vm-second
first=$(logs_of vm-first)
second=$(logs_of vm-second)
for pod in vm-first vm-second; do
  check "$pod was placed on GPU 0 of $node" \
    grep -q "\"uuid\":\"$gpu0\"" <<<"$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}')"
done
check "the first allocated all $pod_mib MiB, none refused" \
  test "$(value fill.allocated_mib "$first")/$(value fill.error "$first")" = "$pod_mib/0"
check "the second allocated all $pod_mib MiB (cuMemAlloc and cuMemCreate), none refused" \
  test "$(value fill.allocated_mib "$second")/$(value fill.error "$second")" = "$pod_mib/0"
check "both jobs' kernels read all of their memory" \
  test "$(value fill.touched "$first")/$(value fill.touched "$second")" = ok/ok
spilled=$(value fill.spilled_mib "$second")
check "the second spilled what the device could not hold (${spilled:-?} MiB in host memory)" \
  test "${spilled:-0}" -gt 0
first_device=$(value fill.device_mib "$first")
second_device=$(value fill.device_mib "$second")
device_sum=$((${first_device:-0} + ${second_device:-0}))
check "the device holds $device_sum MiB of the two, no more than its $gpu_mib MiB" \
  test -n "$first_device" -a -n "$second_device" -a "$device_sum" -le "$gpu_mib"
check "kernels read spilled memory slower than device memory ($(value fill.touch_spilled_us_per_mib "$second") against $(value fill.touch_device_us_per_mib "$second") us/MiB)" \
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' \
  "$(value fill.touch_spilled_us_per_mib "$second")" "$(value fill.touch_device_us_per_mib "$second")"
metric=
for _ in $(seq 20); do
  metric=$(spilled_metric vm-second || true)
  [[ -n $metric && $metric != 0 ]] && break
  sleep 0.5
done
check "the agent's tessera_container_memory_spilled_bytes of the second is its spill (${metric:-nothing} bytes, it saw ${spilled:-?} MiB)" \
  test "${metric:-0}" = $((${spilled:-1} * 1048576))
first_metric=$(spilled_metric vm-first || true)
check "and of the first, which the device held, nothing (${first_metric:-no series})" test "${first_metric:-0}" = 0
# spill_events POD: the GPUMemorySpilled Events on the pod (the agent checks every 2 s).
spill_events() {
  k get events --field-selector "involvedObject.name=$1,reason=GPUMemorySpilled" \
    -o jsonpath='{range .items[*]}{.type} {.count} {.message}{"\n"}{end}'
}
events=
for _ in $(seq 20); do
  events=$(spill_events vm-second || true)
  [[ -n $events ]] && break
  sleep 0.5
done
echo "${events:-no GPUMemorySpilled event}" | sed 's/^/  vm-second event | /'
check "the second pod got one Warning Event GPUMemorySpilled" \
  test "$(grep -c '^Warning 1 ' <<<"$events")" = 1
check "and the first, which did not spill, none" test -z "$(spill_events vm-first || true)"
for pod in vm-first vm-second; do
  k exec "$pod" -- sh -c ": > $release" || fail "kubectl exec could not release $pod"
done
for pod in vm-first vm-second; do
  check_completes "$pod" 120
  logs=$(k logs "$pod" 2>&1 || true)
  check "$pod read all its memory again with the other's in place, freed it and finished" \
    test "$(value fill.touched_again "$logs")/$(value fill.released "$logs")/$(value fill.finished "$logs")" = ok/1/1
done
k delete pod vm-first vm-second --wait=true >/dev/null

echo "== 2. a pod of 6144 MiB alone on a $gpu_mib MiB GPU fills to its limit"
fill_pod vm-limit "$gpu1" 6144 3Gi "$((2 * gpu_mib)) --create"
check_completes vm-limit 180
logs=$(logs_of vm-limit)
check "NVML and cuMemGetInfo in the container report the 6144 MiB limit, more than the GPU" \
  test "$(value nvml.total_mib "$logs")/$(value mem.total_mib "$logs")" = 6144/6144
check "allocations stopped at exactly the 6144 MiB limit" test "$(value fill.allocated_mib "$logs")" = 6144
check "the next allocation got CUDA_ERROR_OUT_OF_MEMORY (2)" test "$(value fill.error "$logs")" = 2
check "what the GPU could not hold came from host memory ($(value fill.spilled_mib "$logs") MiB)" \
  test "$(value fill.spilled_mib "$logs")" -ge $((6144 - gpu_mib))
check "its kernel read all 6144 MiB, and it freed them and finished" \
  test "$(value fill.touched "$logs")/$(value fill.finished "$logs")" = ok/1
k delete pod vm-limit --wait=true >/dev/null

echo "== 3. a pod whose memory limit cannot hold its spill, beside a neighbour"
fill_pod vm-neighbour "$gpu0" "$pod_mib" 4Gi "$pod_mib --wait $release"
check "the neighbour holds its $pod_mib MiB" wait_holding vm-neighbour
fill_pod vm-small "$gpu0" "$pod_mib" 1Gi "$pod_mib"
phase=$(wait_phase vm-small 180 Succeeded Failed) || true
logs=$(logs_of vm-small)
check "the small pod's allocation failed with CUDA_ERROR_OUT_OF_MEMORY (2) short of its $pod_mib MiB ($(value fill.allocated_mib "$logs") MiB)" \
  test "$(value fill.error "$logs")" = 2 -a "$(value fill.allocated_mib "$logs")" -lt "$pod_mib"
check "it spilled less than its 1 GiB memory limit ($(value fill.spilled_mib "$logs") MiB)" \
  test "$(value fill.spilled_mib "$logs")" -lt 1024
check "it used what it got, freed it and finished" \
  test "$(value fill.touched "$logs")/$(value fill.finished "$logs")" = ok/1
state=$(terminated vm-small)
check "its container exited normally, not OOMKilled, never restarted (phase $phase, reason/exit/restarts $state)" \
  test "$phase:$state" = "Succeeded:Completed/0/0"
k exec vm-neighbour -- sh -c ": > $release" || fail "kubectl exec could not release vm-neighbour"
check_completes vm-neighbour 120
logs=$(logs_of vm-neighbour)
check "the neighbour had all $pod_mib MiB, read it twice and finished" \
  test "$(value fill.allocated_mib "$logs")/$(value fill.error "$logs")/$(value fill.touched_again "$logs")/$(value fill.finished "$logs")" = "$pod_mib/0/ok/1"
check "the neighbour's container was never OOMKilled or restarted ($(terminated vm-neighbour))" \
  test "$(terminated vm-neighbour)" = Completed/0/0
finish
