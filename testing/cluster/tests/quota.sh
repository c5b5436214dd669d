#!/usr/bin/env bash
# A namespace GPU quota on the real cluster (issue 36; docs/quotas.md): a ResourceQuota of 10 GiB
# on requests.tessera.io/gpu-memory admits a vGPU pod of 6 GiB and refuses a vcuda pod of 24 units
# (24 x 256 MiB = 6 GiB) through the API server's admission, with a message that says what is used,
# asked and left. A server-side dry run (admission without a write) tells when the scheduler's
# ledger has seen the quota.
source "$(dirname "$0")/lib.sh"
ns=tessera-quota-test

cleanup() { k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT
k delete namespace "$ns" --ignore-not-found --wait=true >/dev/null 2>&1 || true
k create namespace "$ns" >/dev/null
k -n "$ns" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpu-quota
spec:
  hard:
    requests.tessera.io/gpu-memory: 10Gi
YAML

# pod NAME RESOURCES-JSON: a pod of the namespace asking RESOURCES of its one container.
pod() { workload_pod "$1" '{"restartPolicy":"Never"}' main "$2" 'tessera-demo-workload --nvml-only'; }
vgpu6='{"nvidia.com/gpu":1,"nvidia.com/gpumem":6144}'
vcuda6='{"tencent.com/vcuda-core":30,"tencent.com/vcuda-memory":24}'
vgpu11='{"nvidia.com/gpu":1,"nvidia.com/gpumem":11264}'

# The webhook refuses an 11 GiB pod once the ledger has the quota (its watch, a moment).
quota_known() {
  local out
  out=$(pod probe "$vgpu11" | k -n "$ns" create --dry-run=server -f - 2>&1 >/dev/null) && return 1
  grep -q 'GPU memory quota 10 GiB' <<<"$out"
}
deadline=$((SECONDS + 30))
until quota_known; do
  ((SECONDS < deadline)) || break
  sleep 0.5
done
check "the webhook knows the namespace's 10 GiB quota (an 11 GiB pod is refused)" quota_known

create_vgpu() { pod quota-vgpu "$vgpu6" | k -n "$ns" create -f - >/dev/null; }
check "a vGPU pod of 6 GiB is admitted" create_vgpu
refusal=$(pod quota-vcuda "$vcuda6" | k -n "$ns" create -f - 2>&1 >/dev/null || true)
echo "  vcuda pod: $refusal"
check "a vcuda pod of 24 units (6 GiB) is refused" \
  grep -q 'denied the request' <<<"$refusal"
check "the refusal says what is used, asked and left" grep -qF \
  "namespace $ns: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 6 GiB used, 6 GiB asked (container \"main\": vcuda tencent.com/vcuda-core: 30, tencent.com/vcuda-memory: 24 = 1 GPU x 6144 MiB, 30% cores), 4 GiB left" \
  <<<"$refusal"
absent() { ! k -n "$ns" get pod "$1" >/dev/null 2>&1; }
check "the vcuda pod does not exist" absent quota-vcuda
finish
