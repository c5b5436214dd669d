#!/usr/bin/env bash
# Tessera's annotations are signed on this cluster (the scheduler and every node agent share the
# key file lib/tessera.sh makes). A GPU pod still runs, and its decision, its node's record and the
# node's inventory carry signatures. Then the cluster admin creates in kube-system, which no
# webhook sees, pods bound to that node by hand with schedulerName tessera and a decision of their
# own: one hand-written (a whole GPU), one copied with its signature from the pod that ran. The
# node agent starts neither: kubelet reports its refusal, naming the signature, and the agent
# counts them in tessera_node_unverified_annotations_total.
source "$(dirname "$0")/lib.sh"
genuine=test-signed
forged=(test-forged-handwritten test-forged-copied)

cleanup() {
  k delete pod "$genuine" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k -n kube-system delete pod "${forged[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT
k delete pod "$genuine" --ignore-not-found --wait=true >/dev/null
k -n kube-system delete pod "${forged[@]}" --ignore-not-found --wait=true >/dev/null

workload_pod "$genuine" '{"restartPolicy":"Never"}' main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2000}' \
  'tessera-demo-workload --nvml-only' | k create -f - >/dev/null
check_completes "$genuine" 120
check_nvml_total "$genuine" main 2000
annotation() { # annotation KIND NAME KEY [NAMESPACE]
  k -n "${4:-default}" get "$1" "$2" -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("annotations", {}).get(sys.argv[1], ""))' "$3"
}
node=$(k get pod "$genuine" -o 'jsonpath={.spec.nodeName}')
allocation=$(annotation pod "$genuine" tessera.io/allocation)
signature=$(annotation pod "$genuine" tessera.io/allocation-signature)
check "the scheduler signed its decision ($signature)" grep -Eq '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{43}$' <<<"$signature"
check "the node agent signed its record" test -n "$(annotation pod "$genuine" tessera.io/allocated-signature)"
check "the node agent signed $node's inventory" test -n "$(annotation node "$node" tessera.io/gpus-signature)"

# forged_pod NAME ALLOCATION [SIGNATURE]: the pod as JSON, bound to $node in kube-system.
forged_pod() {
  python3 - "$@" <<PY
import json, sys
name, allocation = sys.argv[1], sys.argv[2]
annotations = {"tessera.io/allocation": allocation}
if len(sys.argv) > 3:
    annotations["tessera.io/allocation-signature"] = sys.argv[3]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": name, "namespace": "kube-system", "annotations": annotations},
    "spec": {"schedulerName": "tessera", "nodeName": "$node", "restartPolicy": "Never",
             "terminationGracePeriodSeconds": 1,
             "containers": [{"name": "main", "image": "tessera.local/workload:dev",
                             "command": ["sh", "-c", "tessera-demo-workload --nvml-only"],
                             "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 2000}}}]}}))
PY
}
whole_gpu=$(python3 -c '
import json, sys
a = json.loads(sys.argv[1])
for c in a["containers"]:
    for d in c["devices"]:
        d["memoryMiB"], d["cores"] = 1000000, 100
print(json.dumps(a, separators=(",", ":")))' "$allocation")
forged_pod "${forged[0]}" "$whole_gpu" | k create -f - >/dev/null
forged_pod "${forged[1]}" "$allocation" "$signature" | k create -f - >/dev/null

# refusal POD: kubelet's events of the pod, once one names the agent's refusal (60 s at most).
refusal() {
  local deadline=$((SECONDS + 60)) events
  while ((SECONDS < deadline)); do
    events=$(k -n kube-system get events --field-selector "involvedObject.name=$1" \
      -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null || true)
    grep -q "tessera.io/allocation of pod kube-system/$1" <<<"$events" && break
    sleep 1
  done
  echo "$events"
}
for pod in "${forged[@]}"; do
  events=$(refusal "$pod")
  echo "$events" | grep -i "tessera" | head -n 2 | sed 's/^/  | /'
  case $pod in
  *handwritten) want="is not signed by the Tessera scheduler" ;;
  *copied) want="does not verify: its signature (key id ${signature:3:8}) does not match" ;;
  esac
  check "kubelet reports the agent's refusal of $pod ($want)" grep -qF "$want" <<<"$events"
  check "its container never started" \
    test "$(k -n kube-system get pod "$pod" -o 'jsonpath={.status.phase}/{.status.containerStatuses[0].state.running}{.status.containerStatuses[0].state.terminated}')" = Pending/
  check "the agent did not mark it allocation-failed (not its verdict on a decision of Tessera's)" \
    test -z "$(annotation pod "$pod" tessera.io/allocation-failed kube-system)"
done
node_ip=$(k get node "$node" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
count=$(curl -sf --max-time 5 "http://$node_ip:9394/metrics" |
  sed -n 's/^tessera_node_unverified_annotations_total{annotation="tessera.io\/allocation"} //p')
check "the agent counts the refusals (tessera_node_unverified_annotations_total: ${count:-none})" \
  test "${count:-0}" -ge 2
check "the scheduler logged the decisions it could not verify" \
  grep -q "tessera.io/allocation of pod kube-system/${forged[0]} is not signed" "$cluster_dir/logs/tessera-scheduler.log"
k -n kube-system delete pod "${forged[@]}" --wait=true >/dev/null
k delete pod "$genuine" --wait=true >/dev/null
finish
