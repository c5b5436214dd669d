#!/usr/bin/env bash
# Placement at more nodes than this machine runs kubelets for, with the real kube-scheduler and the
# real API server: ten GPU nodes of three models that are API objects only (status and a signed
# tessera.io/gpus written here, as the node agent writes them; a taint keeps other tests' pods off
# them; no kubelet ever runs their pods). Then:
# - 200 pods of the three dialects in one burst, the Tessera scheduler restarted while they are
#   placed: every pod placed holds GPUs of its own node, and no GPU is given more memory, compute
#   or vGPU slots than it has, across the restart (the new scheduler rebuilt its usage from the
#   API server);
# - 64 pods at once onto one node of two 40960 MiB GPUs: exactly the 40 that fit are placed.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
label=tessera.io/test-api-node

cleanup() {
  k delete pods -l "$label" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1 || true
  k delete nodes -l "$label" --ignore-not-found >/dev/null 2>&1 || true
}
cleanup

# api_node NAME MODEL COUNT MIB [SLOTS]: a Node object with COUNT GPUs of MIB (and SLOTS vGPU
# slots each, 10 by default), as an agent publishes them.
api_node() {
  k create -f - >/dev/null <<EOT
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels: {$label: "true", kubernetes.io/hostname: $1, tessera.io/gpu-node: "true"}
spec:
  taints: [{key: $label, value: "true", effect: NoSchedule}]
EOT
  k patch node "$1" --subresource=status --type=merge -p '{"status":{
    "capacity":{"cpu":"64","memory":"512Gi","pods":"110"},
    "allocatable":{"cpu":"64","memory":"512Gi","pods":"110"},
    "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady",
                   "message":"an API object of cluster.api_nodes"}]}}' >/dev/null
  local uid value
  uid=$(k get node "$1" -o 'jsonpath={.metadata.uid}')
  value=$(python3 -c '
import json, sys
name, model, count, mib, slots = sys.argv[1:]
print(json.dumps({"version": 1, "gpus": [
    {"uuid": f"GPU-{name}-{i}", "index": i, "model": model, "memoryMiB": int(mib), "sms": 108,
     "numa": 0, "healthy": True, "slots": int(slots)} for i in range(int(count))]},
    separators=(",", ":")))' "$1" "$2" "$3" "$4" "${5:-10}")
  k annotate node "$1" "tessera.io/gpus=$value" \
    "tessera.io/gpus-signature=$(sign tessera.io/gpus "$uid" "$value")" >/dev/null
}

# pods PREFIX FIRST COUNT [NODE]: COUNT pods of the three dialects in turn on the API nodes other
# than api-pin (or, with NODE, 2048 MiB vGPU pods pinned to it), as one list for `k create -f -`.
pods() {
  python3 - "$@" <<'PY'
import json, random, sys
prefix, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
node = sys.argv[4] if len(sys.argv) > 4 else ""
rng = random.Random(first)
items = []
for i in range(first, first + count):
    if node:
        limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "2048"}
    else:
        limits = [{"nvidia.com/gpu": str(rng.choice([1, 1, 2])), "nvidia.com/gpumem": str(rng.choice([2048, 4096, 8192])),
                   "nvidia.com/gpucores": str(rng.choice([0, 10, 30]))},
                  {"tencent.com/vcuda-core": str(rng.choice([10, 25, 50, 100])), "tencent.com/vcuda-memory": str(rng.choice([8, 16, 32]))},
                  {"aliyun.com/gpu-mem": str(rng.choice([2, 4, 8]))}][i % 3]
    selector = {"tessera.io/test-api-node": "true"}
    affinity = {}
    if node:
        selector["kubernetes.io/hostname"] = node
    else:
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["api-pin"]}]}]}}}
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"{prefix}-{i}", "labels": {"tessera.io/test-api-node": prefix}},
                  "spec": {"nodeSelector": selector, "affinity": affinity,
                           "tolerations": [{"operator": "Exists"}],
                           "containers": [{"name": "main", "image": "tessera.local/workload:dev",
                                           "resources": {"limits": limits}}]}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
}

# placed PREFIX: the number of that burst's pods bound to a node.
placed() {
  k get pods -l "$label=$1" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
wait_placed() { # wait_placed PREFIX COUNT SECONDS: until COUNT are placed and no more come
  local deadline=$((SECONDS + $3)) n last=-1 still=0
  while ((SECONDS < deadline)); do
    n=$(placed "$1")
    ((n >= $2)) && return 0
    if ((n == last)); then ((++still >= 10)) && return 0; else still=0; fi
    last=$n
    sleep 1
  done
}


trap cleanup EXIT
for i in 0 1 2 3; do api_node "api-h200-$i" "SimGPU-H200" 8 144384; done
for i in 0 1 2; do api_node "api-a100-$i" "SimGPU-A100" 4 40960; done
for i in 0 1 2; do api_node "api-t4-$i" "SimGPU-T4" 4 15360; done
api_node api-pin "SimGPU-A100" 2 40960 32  # memory, not slots, is what runs out there

# 100 pods, then a restart of the Tessera scheduler, then 100 more: the second half is placed by a
# scheduler that knows the first only from the API server.
pods burst 0 100 | k create -f - >/dev/null
wait_placed burst 100 120
echo "$(placed burst) of the first 100 placed; the Tessera scheduler restarts"
"$harness" restart --dir "$cluster_dir" tessera-scheduler >/dev/null
pods burst 100 100 | k create -f - >/dev/null
wait_placed burst 200 240
n=$(placed burst)
echo "$n of 200 placed in the end"
check "most of the 200 pods are placed ($n)" test "$n" -gt 150
check "no GPU holds more than it has, across the restart" no_gpu_overcommitted "$label"
k delete pods -l "$label=burst" --grace-period=0 --force >/dev/null 2>&1

# One node of two 40960 MiB GPUs: 20 pods of 2048 MiB on each, 40 in all.
pods pin 0 64 api-pin | k create -f - >/dev/null
wait_placed pin 64 120
n=$(placed pin)
check "64 pods at once onto one node of 2 x 40960 MiB: exactly the 40 that fit are placed ($n)" \
  test "$n" = 40
check "no GPU holds more than it has" no_gpu_overcommitted "$label"
finish
