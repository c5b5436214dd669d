#!/usr/bin/env bash
# A plain pod (no GPU) runs on the real cluster, placed by the default kube-scheduler, and
# `kubectl logs` shows what its container printed.
source "$(dirname "$0")/lib.sh"

k delete pod plain --ignore-not-found --wait=true >/dev/null
k apply -f - >/dev/null <<'EOT'
apiVersion: v1
kind: Pod
metadata:
  name: plain
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: tessera.local/workload:dev
    command: ["/bin/sh", "-c", "echo hello from $(hostname); cat /proc/1/cgroup | head -n1"]
EOT
phase=$(wait_phase plain 120 Succeeded Failed) || true
check "the plain pod ran to completion (phase $phase)" test "$phase" = Succeeded
[[ $phase == Succeeded ]] || describe_pod plain
logs=$(k logs plain 2>&1 || true)
echo "$logs" | sed 's/^/  | /'
check "kubectl logs shows the container's output" grep -q "^hello from plain$" <<<"$logs"
node=$(k get pod plain -o 'jsonpath={.spec.nodeName}')
check "the pod was placed on a node ($node)" test -n "$node"
scheduler=$(k get events --field-selector involvedObject.name=plain,reason=Scheduled \
  -o 'jsonpath={.items[0].reportingComponent}')
check "default-scheduler placed it (event from '$scheduler')" test "$scheduler" = default-scheduler
k delete pod plain --wait=true >/dev/null
finish
