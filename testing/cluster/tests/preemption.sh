#!/usr/bin/env bash
# GPU preemption on the real cluster, on node-a (2 x 24268 MiB). Five low-priority pods fill both
# GPUs: "big" (16000 MiB) beside "small-0" (8000) on one, "small-1..3" (8000 each) on the other.
# - a high-priority pod of 30000 MiB, more than a GPU holds, and a low-priority pod of 16000 MiB
#   (no pod of lower priority than its own) stay Pending: nothing is evicted for them;
# - a high-priority pod of 16000 MiB evicts exactly "big", the one pod whose share makes it fit
#   (evicting two of the 8000 MiB pods would too, but that is two), runs where "big" was with its
#   own limit, and every other pod runs on.
# kube-scheduler's own preemption cannot see GPUs (they are ignoredByScheduler): this is the
# Tessera scheduler's (docs/scheduler.md, "Preemption").
source "$(dirname "$0")/lib.sh"
node=node-a
pods=(big small-0 small-1 small-2 small-3)

cleanup() {
  k delete pod "${pods[@]}" high huge peer --ignore-not-found --wait=true >/dev/null 2>&1
  k delete priorityclass tessera-test-low tessera-test-high --ignore-not-found >/dev/null 2>&1
}
cleanup
k apply -f - >/dev/null <<EOT
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: tessera-test-low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: tessera-test-high}
value: 1000
EOT

# gpu_pod NAME CLASS MIB: a pod of that priority class on node-a holding MIB of one GPU until
# it is deleted.
gpu_pod() {
  workload_pod "$1" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"priorityClassName\":\"$2\"}" \
    main "{\"nvidia.com/gpu\":1,\"nvidia.com/gpumem\":$3}" 'tessera-demo-workload --nvml-only; sleep 3600' |
    k create -f - >/dev/null
}
# The first two are placed first, so that binpack puts them together on one GPU.
gpu_pod big tessera-test-low 16000
k wait --for=condition=Ready pod/big --timeout=120s >/dev/null
gpu_pod small-0 tessera-test-low 8000
k wait --for=condition=Ready pod/small-0 --timeout=120s >/dev/null
for i in 1 2 3; do gpu_pod "small-$i" tessera-test-low 8000; done
check "the five low-priority pods run" k wait --for=condition=Ready "${pods[@]/#/pod/}" --timeout=120s
gpu_of() { k get pod "$1" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["containers"][0]["devices"][0]["uuid"])'; }
check "big and small-0 share one GPU, the other three the other" \
  test "$(gpu_of big)" = "$(gpu_of small-0)" -a "$(gpu_of small-1)" != "$(gpu_of big)"

uids() { k get pod "${pods[@]}" -o 'jsonpath={.items[*].metadata.uid}'; }
before=$(uids)
gpu_pod huge tessera-test-high 30000
gpu_pod peer tessera-test-low 16000
sleep 10  # several scheduling attempts
check "a pod no GPU could ever hold stays Pending" test "$(wait_phase huge 1 Pending)" = Pending
check "a pod with no pod of lower priority to evict stays Pending" test "$(wait_phase peer 1 Pending)" = Pending
check "nothing was evicted for them" test "$(uids)" = "$before"
reason=$(k get pod huge -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
check "its reason names the GPU that is too small ($reason)" grep -q "need 30000 MiB" <<<"$reason"
k delete pod huge peer --wait=true >/dev/null

t0=$SECONDS
gpu_pod high tessera-test-high 16000
check "the high-priority pod runs" k wait --for=condition=Ready pod/high --timeout=180s
echo "the high-priority pod ran $((SECONDS - t0)) s after it was created"
check "big was preempted (deleted)" k wait --for=delete pod/big --timeout=60s
check "the high-priority pod took big's GPU" test "$(gpu_of high)" = "$(gpu_of small-0)"
check_nvml_total high main 16000
for p in small-0 small-1 small-2 small-3; do
  check "$p still runs" test "$(k get pod "$p" -o 'jsonpath={.status.phase}')" = Running
done
events=$(k get events --field-selector involvedObject.name=big,reason=Preempted -o 'jsonpath={.items[*].message}')
check "big's event says who preempted it ($events)" grep -q "preempted by default/high" <<<"$events"
net=$(sed -n 's/^declare -- net="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
metrics=$(curl -s --max-time 5 --cacert "$cluster_dir/tessera-certs/ca.crt" "https://10.$net.0.1:8443/metrics")
check "the scheduler counts one preemption with one victim" \
  grep -qx "tessera_scheduler_preempted_pods_total 1" <<<"$metrics"
cleanup
finish
