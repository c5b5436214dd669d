#!/usr/bin/env bash
# A rolling update of the node agent as the DRA driver (docs/dra.md, "Rolling updates"), on a dev
# cluster started without Tessera (--tessera none): the chart installed with node.mode=dra and
# node.updateStrategy maxSurge 1, maxUnavailable 0, on node-a alone; then `helm upgrade` changes
# the agent's pod template, so the DaemonSet starts a new agent beside the old one. Checked:
# - both agents serve at once (each one's registration and service sockets in kubelet's plugin
#   folders answer), kubelet registered the new endpoint while the old one was registered, then
#   only the new agent's sockets are left;
# - a pod whose claim the old agent prepared runs on through the update, its container never
#   restarts, and after the update it allocates up to its claim's limit and no further;
# - a claim created while both serve is prepared (its pod runs with the claim's memory), by
#   whichever agent kubelet picks (printed);
# - after the update, deleting the old agent's pod is unprepared by the new agent: the claim's
#   folder, region and CDI spec go, its entry in dra-claims.json too;
# - the node's ResourceSlice is never deleted (the same object, its UID unchanged, in every sample);
# then `helm uninstall` leaves no object, socket, slice or file outside the state folders.
# Prints how long the update took and how long both agents served.
#
#   install_dra_update.sh CLUSTER_DIR
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/install_lib.sh"
chart=$repo/deploy/helm/tessera
node=node-a
nd=$cluster_dir/nodes/$node
registry=$nd/var/lib/kubelet/plugins_registry
service_dir=$nd/var/lib/kubelet/plugins/gpu.tessera.io
state=$nd/var/lib/tessera
slice_selector="spec.nodeName=$node,spec.driver=gpu.tessera.io"
# The claim's process waits this long before it allocates: the update ends well before.
fill_wait=90
pids=()
stop_samplers() {
  local pid
  touch "$work/stop"
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
old_logger=
trap 'stop_samplers; [[ -z $old_logger ]] || kill "$old_logger" 2>/dev/null || true; rm -rf "$work"' EXIT

snapshot_nodes "$work/before"
start=$(now)
if ! "$components/helm" install tessera "$chart" --namespace "$ns" --create-namespace \
  --values "$repo/testing/deploy/helm/dev-cluster-values.yaml" \
  --set "node.kubeletCgroupRoot=$kubelet_cgroup_root" --set node.mode=dra \
  --set node.updateStrategy.rollingUpdate.maxSurge=1 \
  --set node.updateStrategy.rollingUpdate.maxUnavailable=0 >"$work/helm.log" 2>&1; then
  fail "helm install: $(cat "$work/helm.log")"
  finish
fi
ok "helm install with node.mode=dra and maxSurge 1"
k label node "$node" tessera.io/enabled=true --overwrite >/dev/null
check "the certificate Job completed" \
  k -n "$ns" wait --for=condition=complete job/tessera-certgen-1 --timeout=180s
check "the scheduler is available (its webhooks check claims)" \
  k -n "$ns" rollout status deployment/tessera-scheduler --timeout=180s
check "the node agent runs on $node" k -n "$ns" rollout status daemonset/tessera-node --timeout=180s
slice_uid() {
  k get resourceslices --field-selector "$slice_selector" -o 'jsonpath={.items[*].metadata.uid}' 2>/dev/null || true
}
deadline=$((SECONDS + 60))
until [[ -n $(slice_uid) ]] || ((SECONDS > deadline)); do sleep 0.5; done
slice_before=$(slice_uid)
check "$node's ResourceSlice is published ($slice_before)" test -n "$slice_before"
echo "  installed, $node's slice published $(elapsed "$start") s after helm install"

# agent_pods: "NAME UID [DELETION-TIME]" of the agents' pods on the node, the oldest first.
agent_pods() {
  k -n "$ns" get pods -l app.kubernetes.io/name=tessera-node --field-selector "spec.nodeName=$node" \
    --sort-by=.metadata.creationTimestamp \
    -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.deletionTimestamp}{"\n"}{end}'
}
read -r old_pod old_uid < <(agent_pods | sed -n 1p) || true
check "the agent serves its sockets named by its pod's UID ($old_uid)" \
  test -S "$registry/gpu.tessera.io-$old_uid-reg.sock" -a -S "$service_dir/dra-$old_uid.sock"
# The old agent's log, kept after its pod is gone.
k -n "$ns" logs -f "$old_pod" >"$work/old-agent.log" 2>&1 &
old_logger=$!

# A claim of 4 GiB and 30% for each pod, prepared on node-a.
python3 - <<'PY' | k create -f - >/dev/null
import json
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
  "metadata": {"name": "dra-update-4g"},
  "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
    "deviceClassName": "gpu.tessera.io",
    "capacity": {"requests": {"memory": "4Gi", "cores": "30"}}}}]}}}}))
PY
claim_pod() { # claim_pod NAME COMMAND
  python3 - "$1" "$2" "$node" <<'PY' | k create -f - >/dev/null
import json, sys
name, command, node = sys.argv[1:]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
  "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
           "nodeSelector": {"kubernetes.io/hostname": node},
           "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "dra-update-4g"}],
           "containers": [{"name": "main", "image": "tessera.local/workload:dev",
                           "command": ["sh", "-c", command],
                           "resources": {"claims": [{"name": "gpu"}]}}]}}))
PY
}
claim_of() { k get pod "$1" -o 'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}'; }
claim_uid() { k get resourceclaim "$1" -o 'jsonpath={.metadata.uid}'; }
container_id() { k get pod "$1" -o 'jsonpath={.status.containerStatuses[0].containerID}'; }

# The process allocates after the update; then the pod stays, its claim prepared, until deleted.
claim_pod dra-update-running "tessera-hostile-workload fill-after $fill_wait; exec sleep 3600"
check "a pod with a claim runs on $node" k wait --for=condition=Ready pod/dra-update-running --timeout=120s
running_since=$(now)
claim1=$(claim_of dra-update-running)
uid1=$(claim_uid "$claim1")
container1=$(container_id dra-update-running)
check "the old agent prepared its claim $claim1 (its folder is there)" test -f "$state/allocations/$uid1/limits"
check "the old agent logged the prepare" grep -q "prepared a ResourceClaim.*$claim1" "$work/old-agent.log"

# Samplers: kubelet's plugin folders every 50 ms (the agents' sockets that answer a connection, as
# reg:UID and svc:UID), and the node's slice (its UID) every 0.2 s, each line with the time.
python3 - "$registry" "$service_dir" "$work/stop" >"$work/sockets" <<'PY' &
import os, socket, sys, time
registry, service_dir, stop = sys.argv[1:]
def answering(folder, prefix, suffix, tag):
    found = []
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    for name in names:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            os.chdir(folder)  # the whole path is longer than a socket address takes
            s.connect(name)
            found.append(tag + ":" + name[len(prefix):-len(suffix)])
        except OSError:
            found.append("dead-" + tag + ":" + name[len(prefix):-len(suffix)])
        finally:
            s.close()
    return found
last = None
while not os.path.exists(stop):
    state = " ".join(sorted(answering(registry, "gpu.tessera.io-", "-reg.sock", "reg") +
                            answering(service_dir, "dra-", ".sock", "svc")))
    if state != last:
        print(f"{time.time():.3f} {state}", flush=True)
        last = state
    time.sleep(0.05)
PY
pids+=($!)
(while [[ ! -e $work/stop ]]; do
  echo "$(now) $(slice_uid || echo error)"
  sleep 0.2
done) >"$work/slices" &
pids+=($!)
# sockets_now: the sockets that answer now; both_serve: two agents' answer in both folders.
sockets_now() { tail -n1 "$work/sockets" | cut -d' ' -f2-; }
both_serve() {
  [[ $(sockets_now | tr ' ' '\n' | grep -c '^reg:') -ge 2 && $(sockets_now | tr ' ' '\n' | grep -c '^svc:') -ge 2 ]]
}

update_start=$(now)
"$components/helm" upgrade tessera "$chart" --namespace "$ns" --reuse-values \
  --set-string node.podAnnotations.tessera-test-rollout=1 >"$work/helm.log" 2>&1 &&
  ok "helm upgrade changed the agent's pod template" || fail "helm upgrade: $(cat "$work/helm.log")"
deadline=$((SECONDS + 120))
until both_serve || ((SECONDS > deadline)); do sleep 0.05; done
check "the new agent serves beside the old one ($(sockets_now))" both_serve
# A claim created while both serve.
during_created=$(now)
claim_pod dra-update-during 'tessera-demo-workload --nvml-only; exec sleep 3600'
check "the agents rolled out" k -n "$ns" rollout status daemonset/tessera-node --timeout=180s
rolled=$(elapsed "$update_start")
running_at_rollout=$(elapsed "$running_since")
read -r new_pod new_uid < <(agent_pods | awk 'NF == 2' | sed -n 1p) || true
check "a new agent pod ($new_pod) replaced $old_pod" test -n "$new_pod" -a "$new_uid" != "$old_uid"
# The old agent's sockets go when it stops (its pod is deleted once the new one is Ready).
deadline=$((SECONDS + 60))
until [[ $(sockets_now) == "reg:$new_uid svc:$new_uid" ]] || ((SECONDS > deadline)); do sleep 0.2; done
sleep 2 # the slice's samples after the update
stop_samplers
check "then only the new agent's sockets are left ($(sockets_now))" \
  test "$(sockets_now)" = "reg:$new_uid svc:$new_uid"
echo "  kubelet's plugin folders during the update (s after helm upgrade began):"
awk -v t0="$update_start" '{ printf "%.1f", $1 - t0; $1 = ""; print }' "$work/sockets" | sed 's/^/  | /'
# Both served from the first sample with the four sockets answering to the first without them.
both=$(python3 - "$old_uid" "$new_uid" "$work/sockets" <<'PY'
import sys
old, new, samples = sys.argv[1:]
want = {f"reg:{old}", f"svc:{old}", f"reg:{new}", f"svc:{new}"}
begin = end = None
for line in open(samples):
    t, *state = line.split()
    t = float(t)
    if want <= set(state):
        begin = t if begin is None else begin
    elif begin is not None and end is None:
        end = t
print(f"{begin or 0} {end or 0}")
PY
)
read -r both_begin both_end <<<"$both"
both_served=$(python3 -c "print(f'{$both_end - $both_begin:.1f}')")
check "both agents served at once, then the old one stopped (for $both_served s)" \
  python3 -c "import sys; sys.exit(0 if 0 < $both_begin < $both_end else 1)"

# kubelet registered the new endpoint before it unregistered the old (its plugin manager, --v=1).
kubelet_log=$cluster_dir/logs/$node-kubelet.log
line_of() { # line_of RegisterPlugin|UnregisterPlugin UID: the line of kubelet's last such call
  { grep -n "OperationExecutor.$1 started.*gpu.tessera.io-$2-reg.sock" "$kubelet_log" || true; } |
    tail -n1 | cut -d: -f1
}
registered_new=$(line_of RegisterPlugin "$new_uid")
unregistered_old=$(line_of UnregisterPlugin "$old_uid")
check "kubelet registered the old agent's endpoint at install" test -n "$(line_of RegisterPlugin "$old_uid")"
check "kubelet registered the new agent's endpoint while the old one's was registered (log lines $registered_new < $unregistered_old)" \
  test -n "$registered_new" -a -n "$unregistered_old" -a "${registered_new:-0}" -lt "${unregistered_old:-0}"
k -n "$ns" logs "$new_pod" >"$work/new-agent.log" 2>&1 || true
check "kubelet told both agents they are registered" bash -c \
  "grep -q 'registered with kubelet as a DRA plugin' '$work/old-agent.log' && grep -q 'registered with kubelet as a DRA plugin' '$work/new-agent.log'"

# The device health kubelet shows in the pod's status (NodeWatchResources): the new agent's stream
# gives it once the old one's ended.
device_health() {
  k get pod dra-update-running -o 'jsonpath={range .status.containerStatuses[0].allocatedResourcesStatus[*].resources[*]}{.health} {end}'
}
all_healthy() {
  local health
  health=$(device_health)
  [[ -n $health && -z ${health//Healthy /} ]]
}
deadline=$((SECONDS + 30))
until all_healthy || ((SECONDS > deadline)); do sleep 1; done
check "after the update kubelet shows the claim's device Healthy in the pod's status ($(device_health))" all_healthy

# The slice: one object all along.
slice_after=$(slice_uid)
read -r samples present longest < <(python3 - "$slice_before" "$work/slices" <<'PY'
import sys
want, lines = sys.argv[1:]
samples = present = 0
gap_start, longest = None, 0.0
for line in open(lines):
    t, *uid = line.split()
    t = float(t)
    samples += 1
    if uid == [want]:
        present += 1
        if gap_start is not None:
            longest = max(longest, t - gap_start)
            gap_start = None
    elif gap_start is None:
        gap_start = t
print(samples, present, f"{longest:.1f}")
PY
)
check "the ResourceSlice was there in every sample during the update ($present of $samples, longest gap ${longest} s)" \
  test "$present" = "$samples" -a "$samples" -gt 0
check "it is the same object after the update (UID $slice_after): never deleted" test "$slice_after" = "$slice_before"

# The claim created during the update.
check "the pod whose claim was created during the update runs" \
  k wait --for=condition=Ready pod/dra-update-during --timeout=120s
claim2=$(claim_of dra-update-during)
uid2=$(claim_uid "$claim2")
deadline=$((SECONDS + 60))
until [[ -n $(value nvml.total_mib "$(k logs dra-update-during 2>&1)") ]] || ((SECONDS > deadline)); do sleep 1; done
check_nvml_total dra-update-during main 4096
k -n "$ns" logs "$new_pod" >"$work/new-agent.log" 2>&1 || true
prepared_by=$(
  grep -q "prepared a ResourceClaim.*$claim2" "$work/old-agent.log" && echo -n "the old agent "
  grep -q "prepared a ResourceClaim.*$claim2" "$work/new-agent.log" && echo -n "the new agent"
  true
)
check "its claim $claim2 was prepared (by ${prepared_by:-no agent})" test -n "$prepared_by"
# When, by the agent's log, against the old agent's sockets going.
prepared_at=$(cat "$work/old-agent.log" "$work/new-agent.log" | python3 -c '
import datetime, json, sys
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("msg") == "prepared a ResourceClaim" and e.get("claim", "").startswith("default/" + sys.argv[1] + " "):
        print(datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp())' "$claim2")
echo "  created $(python3 -c "print(f'{$during_created - $both_begin:.1f}')") s after both served, prepared \
$(python3 -c "d = $both_end - ${prepared_at:-0}; print(f'{abs(d):.1f} s', 'before' if d >= 0 else 'after')") the old agent's sockets went"

# The old agent's claim: its process lives on and the limit holds after the update.
check "the rollout ended before the claim's process waited its $fill_wait s ($running_at_rollout s)" \
  python3 -c "import sys; sys.exit(0 if $running_at_rollout < $fill_wait else 1)"
check "the old agent's claim is in the prepared claims the new agent shares" grep -q "$uid1" "$state/dra-claims.json"
deadline=$((SECONDS + fill_wait + 60))
until [[ -n $(value fill.allocated_mib "$(k logs dra-update-running 2>&1)") ]] || ((SECONDS > deadline)); do sleep 1; done
check "dra-update-running runs on, its container never restarted (the same container, restartCount 0)" \
  test "$(k get pod dra-update-running -o 'jsonpath={.status.phase} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}')" = "Running $container1 0"
got=$(value fill.allocated_mib "$(k logs dra-update-running 2>&1)")
check "after the update it allocated up to its claim's 4096 MiB, no more (${got:-nothing})" test "$got" = 4096

# Deleting the pods: the new agent unprepares both claims, nothing is left.
claim_files_gone() { # claim_files_gone UID
  [[ ! -e $state/allocations/$1 && ! -e $state/regions/$1 && ! -e $nd/run/cdi/tessera.io-claim-$1.json ]] &&
    ! grep -q "$1" "$state/dra-claims.json"
}
for pod in dra-update-running:$claim1:$uid1 dra-update-during:$claim2:$uid2; do
  IFS=: read -r pod claim uid <<<"$pod"
  k delete pod "$pod" --wait=true >/dev/null
  deadline=$((SECONDS + 60))
  until claim_files_gone "$uid" || ((SECONDS > deadline)); do sleep 0.5; done
  check "$pod deleted: its claim's folder, region, CDI spec and dra-claims.json entry are gone" claim_files_gone "$uid"
  k -n "$ns" logs "$new_pod" >"$work/new-agent.log" 2>&1 || true
  check "the new agent unprepared $claim at kubelet's call" grep -q "unprepared a ResourceClaim.*$claim" "$work/new-agent.log"
done
check "no agent unprepared a claim whose NodeUnprepareResources never came" \
  bash -c "! grep -h 'never came' '$work/old-agent.log' '$work/new-agent.log'"
check "no agent was refused a call (no 403 in their logs)" \
  bash -c "! grep -Eiq 'forbidden|\"code\":403| 403 ' '$work/old-agent.log' '$work/new-agent.log'"
echo "  the update took $rolled s (helm upgrade to the DaemonSet rolled out); both agents served for $both_served s"
k delete resourceclaimtemplate dra-update-4g --wait=true >/dev/null

# docs/install.md, Uninstall.
"$components/helm" uninstall tessera --namespace "$ns" --wait >"$work/helm.log" 2>&1 &&
  ok "helm uninstall" || fail "helm uninstall: $(cat "$work/helm.log")"
uninstalled=$(now)
deadline=$((SECONDS + 60))
while [[ -n $(k -n "$ns" get pods -o name) ]] && ((SECONDS < deadline)); do sleep 1; done
left=$(compgen -G "$registry/gpu.tessera.io*" || true)$(compgen -G "$service_dir/*" || true)
check "the agent removed its sockets${left:+: $left}" test -z "$left"
k delete namespace "$ns" --wait=true >/dev/null
forget_nodes
check_uninstalled
left=$(k get deviceclasses,validatingadmissionpolicies,validatingadmissionpolicybindings -o name | grep -i tessera || true)
check "no DeviceClass or admission policy of Tessera is left${left:+: $left}" test -z "$left"
# kubelet deletes the driver's slices 30 s after its last plugin went (wipingDelay).
deadline=$((SECONDS + 90))
until [[ -z $(slice_uid) ]] || ((SECONDS > deadline)); do sleep 1; done
check "kubelet removed $node's ResourceSlice once the driver was gone ($(elapsed "$uninstalled") s after helm uninstall)" \
  test -z "$(slice_uid)"
check_nodes_clean "$work/before"
finish
