#!/usr/bin/env bash
# kube-controller-manager does its part: a Deployment gets its ReplicaSet and a Running pod, a Job
# runs to completion, every pod gets its service account's token, and deleting the Deployment
# lets the garbage collector remove what it owned.
source "$(dirname "$0")/lib.sh"

k delete deployment sleeper --ignore-not-found --wait=true >/dev/null
k delete job once --ignore-not-found --wait=true >/dev/null
k apply -f - >/dev/null <<'EOT'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sleeper
spec:
  replicas: 1
  selector:
    matchLabels: {app: sleeper}
  template:
    metadata:
      labels: {app: sleeper}
    spec:
      terminationGracePeriodSeconds: 1  # sleep as PID 1 ignores SIGTERM
      containers:
      - name: main
        image: tessera.local/workload:dev
        command: ["/bin/sleep", "3600"]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: tessera.local/workload:dev
        command: ["/bin/sh", "-c", "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token mounted"]
EOT
check "the Deployment becomes available" k rollout status deployment/sleeper --timeout=120s
check "the Job completes" k wait --for=condition=complete job/once --timeout=120s
check "the Job's pod had its service account token" grep -q "^token mounted$" <<<"$(k logs job/once)"
rs=$(k get replicasets -l app=sleeper -o name)
check "the Deployment made a ReplicaSet ($rs)" test -n "$rs"
k delete deployment sleeper --wait=true >/dev/null
gone() { [[ -z $(k get replicasets,pods -l app=sleeper -o name 2>/dev/null) ]]; }
deadline=$((SECONDS + 90))
until gone || ((SECONDS > deadline)); do sleep 0.5; done
check "the garbage collector removed its ReplicaSet and pods" gone
k delete job once --wait=true >/dev/null
finish
