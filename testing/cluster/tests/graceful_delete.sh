#!/usr/bin/env bash
# A pod deleted with a preStop hook and a grace period: while its container runs on through them,
# its allocation's files stay (the agent's housekeeping runs every 2 s in this cluster), and a
# process started in it then still sees its limit. Once the pod is gone, the files go.
source "$(dirname "$0")/lib.sh"
pod=test-graceful-delete

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
workload_pod "$pod" '{"terminationGracePeriodSeconds":40}' \
  main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":3000}' 'tessera-demo-workload --nvml-only; exec sleep 3600' |
  python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["spec"]["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", "15"]}}}
print(json.dumps(pod))' | k create -f - >/dev/null
check "the pod runs" k wait --for=condition=Ready "pod/$pod" --timeout=120s
node=$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')
id=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocated}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["main"]["allocation"])')
alloc=$cluster_dir/nodes/$node/var/lib/tessera/allocations/$id

k delete pod "$pod" --wait=false >/dev/null
sleep 6 # three housekeeping passes
check "the pod is terminating" test -n "$(k get pod "$pod" -o 'jsonpath={.metadata.deletionTimestamp}')"
check "its limits file is still there during preStop" test -f "$alloc/limits"
out=$(k exec "$pod" -- tessera-demo-workload --nvml-only 2>&1 || true)
check "a process started now sees the 3000 MiB limit (NVML: $(value nvml.total_mib "$out"))" \
  test "$(value nvml.total_mib "$out")" = 3000
check "the pod is gone after its grace period" k wait --for=delete "pod/$pod" --timeout=60s
deadline=$((SECONDS + 15))
until [[ ! -e $alloc ]] || ((SECONDS > deadline)); do sleep 0.5; done
check "then housekeeping removed the allocation's files" test ! -e "$alloc"
finish
