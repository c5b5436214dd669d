#!/usr/bin/env bash
# The GPU policy against kube-scheduler's own scores, on the real kube-scheduler (deploy/'s profile,
# extender weight 5, docs/scheduler.md "Scores"). node-b's GPUs already hold a 100000 MiB pod, and
# half of its CPU is requested by a plain pod, so kube-scheduler's default plugins
# (NodeResourcesFit's LeastAllocated, NodeResourcesBalancedAllocation) prefer node-a by about 50.
# binpack prefers node-b by 2 points (its GPU memory fuller after the pod), 100 at weight 5: a new
# small GPU pod that may go anywhere goes to node-b. (At weight 1 it went to node-a.)
source "$(dirname "$0")/lib.sh"
pods=(scores-cpu scores-big scores-small)
k delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null

workload_pod scores-cpu '{"nodeSelector":{"kubernetes.io/hostname":"node-b"}}' \
  main '{"cpu":"1"}' 'sleep 3600' | k create -f - >/dev/null
workload_pod scores-big '{"nodeSelector":{"kubernetes.io/hostname":"node-b"}}' \
  main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":100000}' 'sleep 3600' | k create -f - >/dev/null
check "node-b holds a plain pod with 1 CPU requested and a GPU pod" \
  k wait --for=condition=Ready pod/scores-cpu pod/scores-big --timeout=120s
cpu=$(k get node node-b -o 'jsonpath={.status.allocatable.cpu}')
echo "node-b allocatable CPU: $cpu (1 requested)"

workload_pod scores-small '{"restartPolicy":"Never"}' \
  main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2048}' 'tessera-demo-workload --nvml-only' |
  k create -f - >/dev/null
check "the small GPU pod runs" k wait --for=condition=PodScheduled pod/scores-small --timeout=120s
node=$(k get pod scores-small -o 'jsonpath={.spec.nodeName}')
check "binpack put it beside the other GPU pod, on node-b ($node), against the CPU spread" \
  test "$node" = node-b
k delete pod "${pods[@]}" --wait=true >/dev/null
finish
