#!/usr/bin/env bash
# What the node agent does with decisions Tessera's scheduler never made, on the real kubelet: the
# cluster admin binds pods by hand in kube-system, which no webhook sees.
# - a pod bound with nvidia.com/gpu: 1 and no decision gets the whole GPU behind its device, with
#   no limit (its container sees the GPU's whole memory);
# - a pod bound with a decision that is signed (by the admin, who holds the annotation key) but
#   names a GPU the node does not have is not started, and kubelet reports the agent's reason,
#   naming the pod, the container and the GPU.
source "$(dirname "$0")/lib.sh"
node=node-a
pods=(test-no-decision test-impossible)
cleanup() { k -n kube-system delete pod "${pods[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT
k -n kube-system delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null

# bare_pod NAME EXTRA_SPEC_JSON: a pod of one GPU in kube-system, as JSON.
bare_pod() {
  python3 - "$@" <<'PY'
import json, sys
spec = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "tessera.local/workload:dev",
                        "command": ["sh", "-c", "tessera-demo-workload --nvml-only"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
spec.update(json.loads(sys.argv[2]))
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": sys.argv[1], "namespace": "kube-system"}, "spec": spec}))
PY
}

bare_pod test-no-decision "{\"nodeName\":\"$node\"}" | k create -f - >/dev/null
phase=$(k -n kube-system wait --for=jsonpath='{.status.phase}'=Succeeded pod/test-no-decision \
  --timeout=120s >/dev/null 2>&1 && echo Succeeded || k -n kube-system get pod test-no-decision -o 'jsonpath={.status.phase}')
check "a pod bound by hand without a decision runs (phase $phase)" test "$phase" = Succeeded
total=$(value nvml.total_mib "$(k -n kube-system logs test-no-decision 2>&1)")
check "it sees its GPU's whole memory, 24268 MiB (${total:-nothing})" test "$total" = 24268

# The impossible decision: the pod is created for no scheduler, then bound with a Binding that
# carries the decision and a signature made for its UID with the cluster's key.
bare_pod test-impossible '{"schedulerName":"nobody"}' | k create -f - >/dev/null
uid=$(k -n kube-system get pod test-impossible -o 'jsonpath={.metadata.uid}')
decision='{"version":1,"node":"'$node'","containers":[{"name":"main","mode":"hard","devices":[{"uuid":"GPU-not-here","memoryMiB":1000,"cores":10}]}]}'
python3 -c '
import json, sys
uid, node, decision, signature = sys.argv[1:]
print(json.dumps({"apiVersion": "v1", "kind": "Binding",
                  "metadata": {"name": "test-impossible", "namespace": "kube-system", "uid": uid,
                               "annotations": {"tessera.io/allocation": decision,
                                               "tessera.io/allocation-signature": signature}},
                  "target": {"apiVersion": "v1", "kind": "Node", "name": node}}))' \
  "$uid" "$node" "$decision" "$(sign tessera.io/allocation "$uid" "$decision")" >"$cluster_dir/binding.json"
k create --raw /api/v1/namespaces/kube-system/pods/test-impossible/binding -f "$cluster_dir/binding.json" >/dev/null
rm -f "$cluster_dir/binding.json"
events=""
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
  events=$(k -n kube-system get events --field-selector involvedObject.name=test-impossible \
    -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null || true)
  grep -q "GPU-not-here" <<<"$events" && break
  sleep 1
done
echo "$events" | grep "GPU-not-here" | head -n 1 | sed 's/^/  | /'
check "kubelet reports the agent's reason: the decision names a GPU the node does not have" \
  grep -q "pod kube-system/test-impossible container main.*GPU-not-here is not on this node" <<<"$events"
check "its container never started" \
  test "$(k -n kube-system get pod test-impossible -o 'jsonpath={.status.phase}/{.status.containerStatuses[0].state.running}{.status.containerStatuses[0].state.terminated}')" = Pending/
k -n kube-system delete pod "${pods[@]}" --wait=true >/dev/null
finish
