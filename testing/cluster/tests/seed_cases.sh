#!/usr/bin/env bash
# The seed notes' boundary cases, on the real kube-scheduler through the extender:
# - on an RTX 3090 (24268 MiB) vcuda-memory 94 (24064 MiB) fits and 95 (24320 MiB) does not, with a
#   reason that names both figures;
# - vcuda-core 200 gets two whole GPUs of its own;
# - HAMi's nvidia.com/gpu: 2 gets two distinct GPUs;
# - a GPU type (tessera.io/gpu-model, nvidia.com/use-gputype) and a GPU UUID (nvidia.com/use-gpuuuid)
#   are honoured.
source "$(dirname "$0")/lib.sh"
pods=(seed-94 seed-95 seed-200 seed-two seed-uuid)
k delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null

# with_annotations NAME=VALUE...: adds annotations to the pod JSON on stdin.
with_annotations() {
  python3 -c '
import json, sys
pod = json.load(sys.stdin)
for a in sys.argv[1:]:
    k, _, v = a.partition("=")
    pod["metadata"].setdefault("annotations", {})[k] = v
print(json.dumps(pod))' "$@"
}
devices() { # devices POD: the GPU UUIDs of its first container's decision, one a line
  k get pod "$1" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}' |
    python3 -c 'import json,sys; [print(d["uuid"], d.get("exclusive", False)) for d in json.load(sys.stdin)["containers"][0]["devices"]]'
}
never='{"restartPolicy":"Never"}'

workload_pod seed-94 "$never" main '{"tencent.com/vcuda-memory":94}' 'tessera-demo-workload --nvml-only' |
  with_annotations tessera.io/gpu-model=3090 | k create -f - >/dev/null
check_completes seed-94 120
check_nvml_total seed-94 main 24064
k delete pod seed-94 --wait=true >/dev/null

workload_pod seed-95 "$never" main '{"tencent.com/vcuda-memory":95}' 'tessera-demo-workload --nvml-only' |
  with_annotations nvidia.com/use-gputype=3090 | k create -f - >/dev/null
sleep 5
check "vcuda-memory 95 on a 3090 stays Pending" test "$(wait_phase seed-95 1 Pending)" = Pending
reason=$(k get pod seed-95 -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
echo "reason: $reason"
check "its reason names 24320 MiB and 24268 MiB" \
  grep -q "need 24320 MiB on 1 GPU, largest free 24268 MiB (GPU [01], SimGPU-3090)" <<<"$reason"
check "and why node-b is no place for it" \
  grep -q "needs 1 GPU matching use-gputype=3090, node has 0" <<<"$reason"
k delete pod seed-95 --wait=true >/dev/null

workload_pod seed-200 '{"restartPolicy":"Never","nodeSelector":{"kubernetes.io/hostname":"node-b"}}' \
  main '{"tencent.com/vcuda-core":200}' 'ls /dev | grep -cE "^nvidia[0-9]+$"' | k create -f - >/dev/null
check_completes seed-200 120
d=$(devices seed-200)
check "vcuda-core 200 holds two distinct GPUs, exclusively ($(tr '\n' ' ' <<<"$d"))" \
  test "$(awk '$2 == "True" {print $1}' <<<"$d" | sort -u | wc -l)" = 2
check "and its container has their two device nodes" test "$(k logs seed-200 | tail -n1)" = 2
k delete pod seed-200 --wait=true >/dev/null

workload_pod seed-two "$never" main '{"nvidia.com/gpu":2,"nvidia.com/gpumem":1000}' 'true' |
  k create -f - >/dev/null
check_completes seed-two 120
check "nvidia.com/gpu: 2 holds two distinct GPUs" test "$(devices seed-two | awk '{print $1}' | sort -u | wc -l)" = 2
k delete pod seed-two --wait=true >/dev/null

uuid=$(k get node node-b -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}' |
  python3 -c 'import json,sys; print([g["uuid"] for g in json.load(sys.stdin)["gpus"] if g["index"] == 3][0])')
workload_pod seed-uuid "$never" main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":1000}' 'true' |
  with_annotations "nvidia.com/use-gpuuuid=$uuid" | k create -f - >/dev/null
check_completes seed-uuid 120
check "nvidia.com/use-gpuuuid put it on that GPU ($uuid, node-b GPU 3)" test "$(devices seed-uuid | awk '{print $1}')" = "$uuid"
k delete pod seed-uuid --wait=true >/dev/null
finish
