#!/usr/bin/env bash
# Restarts on the real cluster, on node-b: the node agent, then kubelet, then the whole node (a
# reboot: everything killed, /run emptied with the CDI specs, containerd started again). A
# Deployment's pod with an init container and a container that exits every 15 s runs throughout;
# after each restart its containers start again with their own limits, and a new GPU pod runs on
# the node. After the reboot kubelet may fail the pod at re-admission, before the device plugins
# are back (kubelet's rule for every device plugin, docs/node-agent.md): then the Deployment's
# new pod must run with its limits. Prints how long each restart kept the node from serving new
# pods.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
node=node-b
deployment=test-restarts

k delete deployment "$deployment" --ignore-not-found --wait=true >/dev/null
k wait --for=delete pod -l "app=$deployment" --timeout=60s >/dev/null 2>&1 || true
on_node="{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"}}"
workload_pod "$deployment" "$on_node" \
  init:setup '{"aliyun.com/gpu-mem":3}' 'tessera-demo-workload --nvml-only' \
  main '{"aliyun.com/gpu-mem":5}' 'tessera-demo-workload --nvml-only; sleep 15' |
  python3 -c '
import json, sys
pod = json.load(sys.stdin)
name = pod["metadata"]["name"]
print(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]}}}))
' | k create -f - >/dev/null
# The Deployment's pod that runs (not one that is ending or that kubelet failed).
running_pod() {
  k get pods -l "app=$deployment" --field-selector=status.phase=Running \
    -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
    awk 'NF == 1 { print $1; exit }'
}
wait_running() {
  local deadline=$((SECONDS + 120))
  pod=""
  while ((SECONDS < deadline)); do
    pod=$(running_pod)
    [[ -n $pod ]] && k wait --for=condition=Ready "pod/$pod" --timeout=5s >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
check "the Deployment's pod runs" wait_running

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
# after_reboot OLD SINCE: the pod OLD started its containers again after SINCE, or kubelet failed
# it at re-admission for want of its devices and the Deployment's new pod runs.
after_reboot() {
  local old=$1 since=$2 deadline=$((SECONDS + 120)) reason
  while ((SECONDS < deadline)); do
    reason=$(k get pod "$old" -o 'jsonpath={.status.phase}/{.status.reason}' 2>/dev/null)
    if [[ $reason == Failed/UnexpectedAdmissionError ]]; then
      echo "kubelet failed $old at re-admission (no device plugin registered yet); its Deployment replaced it"
      wait_running && [[ $pod != "$old" ]] && return 0
      return 1
    fi
    pod=$old
    [[ $(started) != "$since" && -n $(started) ]] && restarted "$since" && return 0
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
  old=$pod
  t0=$SECONDS
  case $what in
    "tessera-node restart") "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null ;;
    "kubelet restart") "$harness" restart --dir "$cluster_dir" "$node" kubelet >/dev/null ;;
    reboot) "$harness" reboot --dir "$cluster_dir" "$node" >/dev/null ;;
  esac
  took=$(serves "test-restarts-probe" "$t0") || took=""
  check "after the $what a new GPU pod runs on $node (${took:-never} s after the restart began)" test -n "$took"
  if [[ $what == reboot ]]; then
    check "after the $what the workload's containers start again" after_reboot "$old" "$before"
  else
    check "after the $what the pod's containers start again" restarted "$before"
  fi
  limits_hold "after the $what"
done
k delete deployment "$deployment" --wait=true >/dev/null
finish
