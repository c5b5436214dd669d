#!/usr/bin/env bash
# Without CDI (node.cdi=false, for kubelets before 1.29 whose DevicePluginCDIDevices gate is
# off): node-a's agent is restarted so, and a vGPU pod gets its GPU's device nodes from the
# Allocate answer itself, sees its memory limit, and nothing else; then the agent is restarted
# as before.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
node=node-a
pod=test-no-cdi
restore() { "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null; }
trap restore EXIT
DEV_CLUSTER_AGENT_ENV=TESSERA_NODE_CDI=false "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
workload_pod "$pod" "{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$node\"},\"restartPolicy\":\"Never\"}" \
  main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2500}' 'ls /dev | grep nvidia; tessera-demo-workload --nvml-only' |
  k create -f - >/dev/null
check_completes "$pod" 120
logs=$(k logs "$pod" 2>&1 || true)
echo "$logs" | sed 's/^/  | /'
id=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocated}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["main"]["allocation"])')
check "its allocation ($id) has no CDI spec" test ! -e "$cluster_dir/nodes/$node/run/cdi/tessera.io-container-$id.json"
check "it got one GPU's device node and the control nodes" \
  test "$(grep -cE '^nvidia[0-9]+$' <<<"$logs"):$(grep -c '^nvidiactl$' <<<"$logs")" = 1:1
check "NVML reports its 2500 MiB" test "$(value nvml.total_mib "$logs")" = 2500
k delete pod "$pod" --wait=true >/dev/null
finish
