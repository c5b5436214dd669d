#!/usr/bin/env bash
# Resizing a running container on the real cluster (issue 36; docs/resize.md): through the
# webhook's UPDATE review, the Tessera scheduler's answer, the node agent's new limits file and the
# in-container library's pick-up of it. The issue's figures (a container grows from 4 to 8 GiB and
# its program allocates 7 GiB) are scaled by a quarter, since simgpu's device memory is this
# machine's memory: the container grows from 1024 to 2048 MiB and its program, started before the
# resize, allocates 1792 MiB (7/8 of it) afterwards, without a restart. Then:
#  - a grow that does not fit beside another pod on the GPU is refused with the filter's reason;
#  - a shrink below what the container holds is granted as a ceiling: the agent's Warning Event
#    says so, the process keeps what it holds (not killed, not restarted), a new allocation in the
#    container is refused;
#  - every resize, granted or refused, has its Event on the pod.
source "$(dirname "$0")/lib.sh"
build=$(sed -n 's/^declare -- tessera_build="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
plugin=$build/bin/kubectl-tessera
node=node-a
pods=(rz-main rz-blocker)

cleanup() { k delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup

inventory=$(k get node "$node" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}')
gpu0=$(python3 -c 'import json, sys; print([g["uuid"] for g in json.loads(sys.argv[1])["gpus"] if g["index"] == 0][0])' "$inventory")
gpu0_mib=$(python3 -c 'import json, sys; print([g["memoryMiB"] for g in json.loads(sys.argv[1])["gpus"] if g["index"] == 0][0])' "$inventory")
node_ip=$(k get node "$node" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')

# gpu_pod NAME MIB COMMAND: a vGPU pod of MIB MiB and 30% on GPU 0 of node-a.
gpu_pod() {
  workload_pod "$1" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"restartPolicy\":\"Never\"}" \
    main "{\"nvidia.com/gpu\":1,\"nvidia.com/gpumem\":$2,\"nvidia.com/gpucores\":30}" "$3" |
    python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["annotations"] = {"nvidia.com/use-gpuuuid": sys.argv[1]}
print(json.dumps(pod))' "$gpu0" | k create -f - >/dev/null
}
resize() { "$plugin" resize "pod/rz-main" --kubeconfig "$KUBECONFIG" "$@"; }
decided_mib() {
  k get pod rz-main -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["containers"][0]["devices"][0]["memoryMiB"])'
}
restarts() { k get pod rz-main -o 'jsonpath={.status.containerStatuses[0].restartCount}'; }
container_id() { k get pod rz-main -o 'jsonpath={.status.containerStatuses[0].containerID}'; }
limit_metric() {
  curl -sf --max-time 5 "http://$node_ip:9394/metrics" |
    sed -n 's/^tessera_container_memory_limit_bytes{.*pod="rz-main".*} //p' | head -n1
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.5; done
}
logs_have() { grep -q "^$1$" <<<"$(k logs rz-main 2>/dev/null)"; }
events() {
  k get events --field-selector "involvedObject.name=rz-main,reason=$1" \
    -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}'
}
count_events() { events "$1" | grep -c . || true; }

echo "== a running container grows from 1024 to 2048 MiB; its program then allocates 1792 MiB"
gpu_pod rz-main 1024 'exec tessera-demo-workload --fill 1792 --after /tmp/resized --wait /tmp/release'
check "rz-main runs" wait_phase rz-main 120 Running
check "its program sees 1024 MiB before the resize" wait_for 60 logs_have 'mem.total_mib=1024'
started=$(container_id)
out=$(resize --memory 2Gi 2>&1) || true
echo "  $out"
check "kubectl tessera resize --memory 2Gi is granted" grep -q '^pod/rz-main resized: container "main" resized from 1024 MiB and 30% cores per GPU to 2048 MiB and 30% cores per GPU on node node-a$' <<<"$out"
check "the decision holds 2048 MiB on the same GPU ($(decided_mib) MiB)" test "$(decided_mib)" = 2048
check "the pod's resources stay as written" \
  test "$(k get pod rz-main -o 'jsonpath={.spec.containers[0].resources.limits.nvidia\.com/gpumem}')" = 1024
check "the agent's metrics show the new limit" wait_for 10 test "$(limit_metric)" = 2147483648
k exec rz-main -- sh -c ': >/tmp/resized'
check "the program, started before, sees 2048 MiB" wait_for 30 logs_have 'mem.total_after_mib=2048'
check "it allocated 1792 MiB, none refused" wait_for 60 logs_have 'fill.holding=1'
logs=$(k logs rz-main)
check "  (fill.allocated_mib=$(value fill.allocated_mib "$logs"), fill.error=$(value fill.error "$logs"))" \
  test "$(value fill.allocated_mib "$logs")/$(value fill.error "$logs")" = 1792/0
check "without a restart (restarts $(restarts), same container)" \
  test "$(restarts)/$(container_id)" = "0/$started"
check "one Normal Resized Event" test "$(count_events Resized)" = 1

echo "== a grow that does not fit is refused with the reason"
blocker_mib=$((gpu0_mib - 2048 - 2048))
gpu_pod rz-blocker "$blocker_mib" 'exec sleep 3600'
check "a pod of $blocker_mib MiB runs beside it on GPU 0" wait_phase rz-blocker 120 Running
rc=0
out=$(resize --memory 8Gi 2>&1) || rc=$?
echo "  $out"
check "kubectl tessera resize --memory 8Gi exits 1" test "$rc" = 1
check "with the filter's reason" grep -q 'resize refused: container "main": insufficient GPU memory: need 8192 MiB on 1 GPU, largest free 4096 MiB (GPU 0, SimGPU-3090)' <<<"$out"
check "the decision keeps 2048 MiB" test "$(decided_mib)" = 2048
check "one Warning ResizeRefused Event with the reason" \
  grep -q '^Warning Tessera: resize [0-9a-f]*: container "main": insufficient GPU memory' <<<"$(events ResizeRefused)"

echo "== a shrink below what the container holds is a ceiling"
out=$(resize --memory 1Gi 2>&1) || true
echo "  $out"
check "kubectl tessera resize --memory 1Gi is granted" grep -q '^pod/rz-main resized: .* to 1024 MiB' <<<"$out"
above_event() { grep -q 'holds 1792 MiB on GPU .*, above its new limit of 1024 MiB' <<<"$(events GpuMemoryAboveNewLimit)"; }
check "the agent says on the pod that the container holds more than its new limit" wait_for 15 above_event
sleep 8  # four of the host-side memory check's rounds
check "the process keeps what it holds: not killed, not restarted ($(k get pod rz-main -o 'jsonpath={.status.phase}'), restarts $(restarts))" \
  test "$(k get pod rz-main -o 'jsonpath={.status.phase}')/$(restarts)" = Running/0
check "  and has not ended" test -z "$(value fill.finished "$(k logs rz-main)")"
probe=$(k exec rz-main -- tessera-demo-workload --fill 64 2>&1 || true)
sed 's/^/  probe | /' <<<"$probe"
# Refused with CUDA_ERROR_OUT_OF_MEMORY: its context, which the library charges, or its first chunk.
refused() {
  grep -q 'failed: CUresult 2$' <<<"$probe" ||
    test "$(value fill.allocated_mib "$probe")/$(value fill.error "$probe")" = 0/2
}
check "a new process in the container gets no memory: CUDA_ERROR_OUT_OF_MEMORY" refused
k exec rz-main -- sh -c ': >/tmp/release'
check_completes rz-main 60
check "two Resized Events and one ResizeRefused" \
  test "$(count_events Resized)/$(count_events ResizeRefused)" = 2/1
finish
