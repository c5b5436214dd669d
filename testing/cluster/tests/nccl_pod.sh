#!/usr/bin/env bash
# A pod with two GPUs and a memory limit on each (vGPU dialect: nvidia.com/gpu 2, 2048 MiB per
# GPU) runs NCCL's single-node set-up over cuMem in one process (`tessera-demo-workload --nccl`,
# src/demo/workload_nccl.cc) under Tessera's library: a context per GPU, peer access both ways,
# receive buffers made with cuMemCreate for POSIX file descriptors and mapped for both GPUs, a
# descriptor handed over a Unix socket and imported, copies across the GPUs and a kernel on each
# that reads the peer's memory. Each GPU is charged what was made on it, nothing for what was
# imported or mapped from the other; then each GPU's limit holds while the other keeps its room,
# in both orders (HAMi-core#104: the second card ran about 20 % over). Twice: on node-a's two GPUs,
# and on node-b's GPUs 2 and 3 (nvidia.com/use-gpuuuid), where the container's GPUs 0 and 1 are
# not the node's.
source "$(dirname "$0")/lib.sh"
limit=2048

# gpus_of NODE INDEX...: the UUIDs of the node's GPUs of those indices, comma-separated.
gpus_of() {
  k get node "$1" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}' | python3 -c '
import json, sys
gpus = {g["index"]: g["uuid"] for g in json.load(sys.stdin)["gpus"]}
print(",".join(gpus[int(i)] for i in sys.argv[1:]))' "${@:2}"
}

# nccl_pod POD NODE [UUIDS]: runs the set-up in a pod on NODE (on the GPUs of UUIDS, when given)
# and checks what it printed. The pod is deleted afterwards.
nccl_pod() {
  local pod=$1 node=$2 uuids=${3:-} logs allocation got
  echo "== $pod on $node${uuids:+ (GPUs $uuids)}"
  k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
  workload_pod "$pod" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"restartPolicy\":\"Never\"}" \
    main "{\"nvidia.com/gpu\":2,\"nvidia.com/gpumem\":$limit}" 'tessera-demo-workload --nccl' |
    python3 -c '
import json, sys
pod = json.load(sys.stdin)
if sys.argv[1]:
    pod["metadata"]["annotations"] = {"nvidia.com/use-gpuuuid": sys.argv[1]}
print(json.dumps(pod))' "$uuids" | k create -f - >/dev/null
  check_completes "$pod" 180
  logs=$(k logs "$pod" 2>&1 || true)
  echo "$logs" | sed 's/^/  | /'
  allocation=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}')
  echo "  decision: $allocation"
  got=$(python3 -c 'import json, sys; print(",".join(d["uuid"] for d in json.loads(sys.argv[1])["containers"][0]["devices"]))' \
    "$allocation" 2>/dev/null || true)
  check "the extender gave the container two GPUs of $node (${got:-none})" \
    test "$(tr , '\n' <<<"$got" | sort -u | grep -c .)" = 2 -a "$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')" = "$node"
  if [[ -n $uuids ]]; then
    check "they are the GPUs nvidia.com/use-gpuuuid named" \
      test "$(tr , '\n' <<<"$got" | sort | paste -sd,)" = "$(tr , '\n' <<<"$uuids" | sort | paste -sd,)"
  fi
  check "the process sees two GPUs" test "$(value nccl.gpus "$logs")" = 2
  local gpu own order first second
  for gpu in 0 1; do
    check "cuMemGetInfo on GPU $gpu reports its $limit MiB limit" \
      test "$(value "mem.gpu${gpu}_total_mib" "$logs")" = "$limit"
    check "NVML reports $limit MiB for GPU $gpu" test "$(value "nvml.gpu${gpu}_total_mib" "$logs")" = "$limit"
  done
  check "cuDeviceCanAccessPeer says the GPUs reach each other, both ways" \
    test "$(value nccl.can_access_peer "$logs")" = 1
  check "cuCtxEnablePeerAccess worked from each context to the other" \
    test "$(value nccl.peer_access "$logs")" = ok
  for gpu in 0 1; do
    own=$(value "nccl.gpu${gpu}_own_mib" "$logs")
    check "GPU $gpu is charged the ${own:-?} MiB made on it (receive buffer + cuMemAlloc), not the other's buffer mapped for it" \
      test -n "$own" -a "$(value "nccl.gpu${gpu}_charged_mib" "$logs")" = "$own"
    check "GPU $gpu is charged nothing for the peer's buffer it imported by file descriptor" \
      test "$(value "nccl.gpu${gpu}_import_charged_mib" "$logs")" = 0
    check "a kernel on GPU $gpu read its own buffers and the peer's (mapped, imported, peer access)" \
      test "$(value "nccl.kernel_gpu${gpu}" "$logs")" = ok
  done
  check "copies across the GPUs worked (through the peer's mappings and cuMemcpyPeer)" \
    test "$(value nccl.copies "$logs")" = ok
  for order in gpu0_first gpu1_first; do
    first=${order:3:1}
    second=$((1 - first))
    check "GPU $first's cuMemCreate allocations stopped at its $limit MiB limit ($order)" \
      test "$(value "limit.$order.gpu${first}_mib" "$logs")" = "$limit"
    check "past GPU $first's limit, cuMemCreate got CUDA_ERROR_OUT_OF_MEMORY (2) ($order)" \
      test "$(value "limit.$order.gpu${first}_error" "$logs")" = 2
    check "with GPU $first full, GPU $second still had its room: cuMemAlloc reached its $limit MiB ($order)" \
      test "$(value "limit.$order.gpu${second}_mib" "$logs")" = "$limit"
    check "past GPU $second's limit, cuMemAlloc got CUDA_ERROR_OUT_OF_MEMORY (2) ($order)" \
      test "$(value "limit.$order.gpu${second}_error" "$logs")" = 2
  done
  check "after NCCL's teardown both GPUs were back to what they used before" \
    test "$(value nccl.released "$logs")" = 1
  k delete pod "$pod" --wait=true >/dev/null
}

nccl_pod test-nccl-a node-a
nccl_pod test-nccl-b node-b "$(gpus_of node-b 2 3)"
finish
