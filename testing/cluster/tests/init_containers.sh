#!/usr/bin/env bash
# Init containers on the real kubelet: a plain init container, a restartable one (a sidecar) and an
# app container, each asking for one nvidia.com/gpu with its own memory. kubelet hands the plain
# init container's device on to the sidecar (devicesToReuse in its device manager), so both hold
# the same device ID; each container must still see its own limit in NVML.
source "$(dirname "$0")/lib.sh"
pod=test-init-containers

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
workload_pod "$pod" '{"restartPolicy":"Never"}' \
  init:setup '{"nvidia.com/gpu":1,"nvidia.com/gpumem":1000}' 'tessera-demo-workload --nvml-only' \
  sidecar:sidecar '{"nvidia.com/gpu":1,"nvidia.com/gpumem":1500}' \
  'tessera-demo-workload --nvml-only; exec sleep 3600' \
  app '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2000}' 'tessera-demo-workload --nvml-only' |
  k create -f - >/dev/null
check_completes "$pod" 180
for c in setup:1000 sidecar:1500 app:2000; do check_nvml_total "$pod" "${c%%:*}" "${c#*:}"; done
# What kubelet recorded, for the reader: the plain init container's device went on to the sidecar.
node=$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')
uid=$(k get pod "$pod" -o 'jsonpath={.metadata.uid}')
python3 - "$cluster_dir/nodes/$node/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint" "$uid" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))["Data"]["PodDeviceEntries"] or []
for e in entries:
    if e["PodUID"] == sys.argv[2] and e["ResourceName"] == "nvidia.com/gpu":
        ids = sorted(i for v in e["DeviceIDs"].values() for i in v)
        print(f"  kubelet: container {e['ContainerName']} holds {','.join(ids)}")
PY
allocated=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocated}')
check "each container has its own allocation in tessera.io/allocated" python3 -c '
import json, sys
a = json.loads(sys.argv[1])
ids = {c: a[c]["allocation"] for c in ("setup", "sidecar", "app")}
sys.exit(0 if len(set(ids.values())) == 3 else 1)' "$allocated"
k delete pod "$pod" --wait=true >/dev/null
finish
