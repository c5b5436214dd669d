#!/usr/bin/env bash
# Two Tessera scheduler replicas with leader election against the real API server, under
# deploy/'s RBAC (the tessera-scheduler service account and its Lease): one holds the Lease and
# binds; the other keeps its state, answers, and refuses binds naming the leader. Killed without a
# goodbye, the leader is replaced within the lease duration; the one started again follows.
# The cluster's own scheduler runs without election and is not involved. (That kube-scheduler
# reaches the leader through the extender's Service is for the in-cluster install.)
source "$(dirname "$0")/lib.sh"

net=$(sed -n 's/^declare -- net="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
tessera_build=$(sed -n 's/^declare -- tessera_build="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
host_ip=10.$net.0.1
certs=$cluster_dir/tessera-certs
work=$(mktemp -d)
declare -A pid port=([test-a]=8444 [test-b]=8445)

replica() { # replica NAME: starts it in the background
  "$tessera_build/bin/tessera" scheduler --kubeconfig "$cluster_dir/kubeconfig/tessera-scheduler.kubeconfig" \
    --listen="$host_ip:${port[$1]}" --scheduler.tls.cert="$certs/server.crt" \
    --scheduler.tls.key="$certs/server.key" --scheduler.tls.client-ca="$certs/ca.crt" \
    --scheduler.annotation-key-file="$cluster_dir/annotation-key" --log.format=json \
    --scheduler.leader-election.enabled=true --scheduler.leader-election.identity="$1" \
    --scheduler.leader-election.lease-duration=4s --scheduler.leader-election.renew-deadline=3s \
    --scheduler.leader-election.retry-period=500ms >>"$work/$1.log" 2>&1 &
  pid[$1]=$!
}
cleanup() {
  local p
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  k -n tessera-system delete lease tessera-scheduler --ignore-not-found >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
k -n tessera-system delete lease tessera-scheduler --ignore-not-found >/dev/null

holder() { k -n tessera-system get lease tessera-scheduler -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
# waits up to SECONDS for the Lease to be held by NAME
held_by() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do [[ $(holder) == "$1" ]] && return 0; sleep 0.2; done
  return 1
}
# bind NAME: the Error of a bind of a pod that does not exist, asked of replica NAME as
# kube-scheduler asks (its client certificate)
bind() {
  curl -s --max-time 5 --cacert "$certs/ca.crt" --cert "$certs/kube-scheduler.crt" \
    --key "$certs/kube-scheduler.key" -H 'Content-Type: application/json' \
    -d '{"PodName":"no-such-pod","PodNamespace":"default","Node":"node-a"}' \
    "https://$host_ip:${port[$1]}/bind"
}
ready() { curl -sf --max-time 2 --cacert "$certs/ca.crt" "https://$host_ip:${port[$1]}/readyz" >/dev/null; }
wait_ready() {
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do ready "$1" && return 0; sleep 0.2; done
  return 1
}

replica test-a
check "test-a takes the Lease" held_by test-a 30
replica test-b
check "test-b is ready too (synced; it serves the webhooks)" wait_ready test-b
check "test-a, the leader, binds (the pod is unknown, not the replica refused)" \
  grep -q "is not an unbound pod" <<<"$(bind test-a)"
answer=$(bind test-b)
check "test-b refuses binds and names the leader ($answer)" \
  grep -q "does not lead, so it binds no pod (the leader is test-a)" <<<"$answer"

kill -9 "${pid[test-a]}"
t0=$SECONDS
check "test-b takes over when test-a dies" held_by test-b 15
echo "test-b led $((SECONDS - t0)) s after test-a was killed (lease duration 4 s)"
leading() { grep -q "is not an unbound pod" <<<"$(bind test-b)"; }
wait_leading() {
  local deadline=$((SECONDS + 15))
  while ((SECONDS < deadline)); do leading && return 0; sleep 0.2; done
  return 1
}
check "test-b binds once it leads" wait_leading
check "test-b caught up with every pod before it led" \
  grep -q '"msg":"leading: this replica binds and preempts"' "$work/test-b.log"

replica test-a
check "test-a, started again, is ready" wait_ready test-a
check "and follows: it refuses binds" grep -q "the leader is test-b" <<<"$(bind test-a)"
check "the Lease stays with test-b" test "$(holder)" = test-b
finish
