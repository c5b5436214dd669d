#!/usr/bin/env bash
# Containers holding more than one device of a resource, one per dialect, in one pod on node-b:
# two whole vGPU slots on two GPUs, 30 vcuda-core units with 12 vcuda-memory units, 3 gpu-mem
# units. kubelet records one device ID after another; each container must be found by its whole
# set and see its own memory.
source "$(dirname "$0")/lib.sh"
pod=test-multi-unit

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
workload_pod "$pod" '{"nodeSelector":{"kubernetes.io/hostname":"node-b"},"restartPolicy":"Never"}' \
  vgpu '{"nvidia.com/gpu":2,"nvidia.com/gpumem":3000}' \
  'tessera-demo-workload --nvml-only; ls /dev | grep -cE "^nvidia[0-9]+$"' \
  vcuda '{"tencent.com/vcuda-core":30,"tencent.com/vcuda-memory":12}' 'tessera-demo-workload --nvml-only' \
  gpushare '{"aliyun.com/gpu-mem":3}' 'tessera-demo-workload --nvml-only' |
  k create -f - >/dev/null
check_completes "$pod" 120
for c in vgpu:3000 vcuda:3072 gpushare:3072; do check_nvml_total "$pod" "${c%%:*}" "${c#*:}"; done
check "the vgpu container has the device nodes of its two GPUs" \
  test "$(k logs "$pod" -c vgpu | tail -n1)" = 2
k delete pod "$pod" --wait=true >/dev/null
finish
