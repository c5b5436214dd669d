#!/usr/bin/env bash
# Restarts on the real cluster, on node-b: the node agent, then kubelet, then the whole node (a
# reboot: everything killed, /run emptied with the CDI specs, containerd started again). A pod
# with an init container and a container that exits every 15 s (restartPolicy Always) runs
# throughout; after each restart its containers start again with their own limits, and a new
# GPU pod runs on the node. Prints how long each restart kept the node from serving new pods.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
node=node-b
pod=test-restarts

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
on_node="{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"}}"
workload_pod "$pod" "$on_node" \
  init:setup '{"aliyun.com/gpu-mem":3}' 'tessera-demo-workload --nvml-only' \
  main '{"aliyun.com/gpu-mem":5}' 'tessera-demo-workload --nvml-only; sleep 15' |
  k create -f - >/dev/null
check "the pod runs" k wait --for=condition=Ready "pod/$pod" --timeout=120s

started() { k get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].state.running.startedAt}'; }
# limits_hold WHAT: the current run of each container saw its own limit.
limits_hold() {
  local setup main deadline=$((SECONDS + 15))
  while :; do
    setup=$(value nvml.total_mib "$(k logs "$pod" -c setup 2>&1)")
    main=$(value nvml.total_mib "$(k logs "$pod" -c main 2>&1)")
    [[ -n $main || $SECONDS -gt $deadline ]] && break
    sleep 0.5
  done
  check "$1: the init container sees 3072 MiB (${setup:-nothing}), the app container 5120 MiB (${main:-nothing})" \
    test "$setup:$main" = 3072:5120
}
# restarted SINCE: waits until the app container started again after SINCE (up to 120 s).
restarted() {
  local since=$1 deadline=$((SECONDS + 120)) now
  while ((SECONDS < deadline)); do
    now=$(started)
    [[ -n $now && $now != "$since" ]] && k wait --for=condition=Ready "pod/$pod" --timeout=5s >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
# serves NAME T0: a new GPU pod on the node runs to completion; prints seconds since T0.
serves() {
  local name=$1 t0=$2
  k delete pod "$name" --ignore-not-found --wait=true >/dev/null
  workload_pod "$name" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"restartPolicy\":\"Never\"}" \
    main '{"aliyun.com/gpu-mem":2}' 'tessera-demo-workload --nvml-only' | k create -f - >/dev/null
  local phase
  phase=$(wait_phase "$name" 240 Succeeded Failed) || true
  [[ $phase == Succeeded && $(value nvml.total_mib "$(k logs "$name" 2>&1)") == 2048 ]] || return 1
  echo $((SECONDS - t0))
  k delete pod "$name" --wait=false >/dev/null
}

for what in "tessera-node restart" "kubelet restart" "reboot"; do
  before=$(started)
  t0=$SECONDS
  case $what in
    "tessera-node restart") "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null ;;
    "kubelet restart") "$harness" restart --dir "$cluster_dir" "$node" kubelet >/dev/null ;;
    reboot) "$harness" reboot --dir "$cluster_dir" "$node" >/dev/null ;;
  esac
  took=$(serves "test-restarts-probe" "$t0") || took=""
  check "after the $what a new GPU pod runs on $node (${took:-never} s after the restart began)" test -n "$took"
  check "after the $what the pod's containers start again" restarted "$before"
  limits_hold "after the $what"
done
k delete pod "$pod" --wait=true >/dev/null
finish
