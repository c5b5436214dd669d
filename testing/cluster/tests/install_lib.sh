# Shared by the install tests (install_kustomize.sh, install_helm.sh), which install Tessera on a
# dev cluster started without it (`up --tessera none`) as docs/install.md says, check it, and
# remove it. Sourced after lib.sh.

harness=$repo/testing/cluster/tessera-dev-cluster
ns=tessera-system
# cluster_value NAME: a variable of the cluster's record (cluster.env).
cluster_value() { sed -n "s/^declare -[a-z-]* $1=\"\\(.*\\)\"$/\\1/p" "$cluster_dir/cluster.env"; }
net=$(cluster_value net)
tessera_build=$(cluster_value tessera_build)
components=$(dirname "$kubectl")
[[ $(cluster_value tessera_mode) == none ]] ||
  { echo "the cluster in $cluster_dir runs Tessera already (start it with --tessera none)"; exit 1; }
# kubelet's cgroup root, which each node of this cluster has of its own (lib/node.sh).
kubelet_cgroup_root="/tsr$net-\$(NODE_NAME)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t nodes < <(k get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')

# now: seconds since the epoch, with fractions; elapsed SINCE: the seconds from SINCE (a now).
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }

# The annotation key Secret, made by the installer before deploy/ as docs/install.md allows (the
# certgen Job keeps it).
create_annotation_key() {
  k -n "$ns" create secret generic tessera-annotation-key \
    --from-literal=key="$(openssl rand -base64 32)" >/dev/null
}

# Every GPU node labelled as docs/install.md says; the node agent starts there.
label_nodes() { k label node "${nodes[@]}" tessera.io/enabled=true --overwrite >/dev/null; }

# first_gpu_pod_running START: creates a vGPU pod, again while the webhooks do not answer yet
# (they refuse GPU pods until the scheduler is up, failurePolicy Fail), and prints the seconds
# from START until its container started.
first_gpu_pod_running() {
  local start=$1 pod=first-gpu-pod deadline=$((SECONDS + 300)) out
  until out=$(example_pod vgpu-pod.yaml "$pod" | k create -f - 2>&1); do
    ((SECONDS < deadline)) || { echo "never accepted: $out" >&2; return 1; }
    sleep 1
  done
  wait_phase "$pod" 300 Running Succeeded >/dev/null || { describe_pod "$pod" >&2; return 1; }
  k get pod "$pod" -o json | python3 -c '
import datetime, json, sys
state = json.load(sys.stdin)["status"]["containerStatuses"][0]["state"]
started = next(s["startedAt"] for s in state.values() if "startedAt" in s)
t = datetime.datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
print(f"{t - float(sys.argv[1]):.0f}")' "$start"
  k delete pod "$pod" --wait=true >/dev/null
}

# check_installed CERTGEN_JOB: every part Ready, the node agents' plugins registered with each
# kubelet.
check_installed() {
  check "the certificate Job $1 completed" \
    k -n "$ns" wait --for=condition=complete "job/$1" --timeout=180s
  local d
  for d in tessera-scheduler tessera-kube-scheduler; do
    check "Deployment $d is available" k -n "$ns" rollout status "deployment/$d" --timeout=180s
  done
  check "the node agent DaemonSet runs on every labelled node" \
    k -n "$ns" rollout status daemonset/tessera-node --timeout=180s
  check "its pods are Ready on ${#nodes[@]} nodes" test \
    "$(k -n "$ns" get daemonset tessera-node -o 'jsonpath={.status.numberReady}')" = "${#nodes[@]}"
  local node deadline=$((SECONDS + 60))
  for node in "${nodes[@]}"; do
    until node_allocatable_has_gpus "$node" || ((SECONDS > deadline)); do sleep 1; done
    check "$node: kubelet counts the agent's four resources (its plugins registered)" \
      node_allocatable_has_gpus "$node"
    check "$node: the plugins' sockets are in kubelet's device-plugins folder" \
      bash -c "compgen -G '$cluster_dir/nodes/$node/var/lib/kubelet/device-plugins/tessera*.sock' >/dev/null"
  done
}

node_allocatable_has_gpus() {
  k get node "$1" -o 'jsonpath={.status.allocatable}' | python3 -c '
import json, sys
a = json.load(sys.stdin)
names = ("nvidia.com/gpu", "tencent.com/vcuda-core", "tencent.com/vcuda-memory", "aliyun.com/gpu-mem")
sys.exit(0 if all(a.get(n, "0") != "0" for n in names) else 1)'
}

# The webhooks are called at the Service's cluster IP, over TLS (the API server of a cluster
# without Tessera has no aggregator routing), and the in-cluster kube-scheduler places GPU pods:
# a pod of each dialect runs with its limits.
check_dialect_pods() {
  check_dialect_pod vgpu-pod.yaml 4096 30 SimGPU-3090
  check_dialect_pod vcuda-pod.yaml 4096 50 SimGPU-3090
  check_dialect_pod gpushare-pod.yaml 32768 - SimGPU-H200
}

# check_failover: GPU pods created while the leading scheduler replica is deleted are each placed
# by the replica that takes over, which knows the GPUs the old one gave (it lists every pod
# before it binds), so no GPU gets more than it has (docs/scheduler.md, "Replicas and leader
# election"). 14 pods of 4096 MiB for node-a's two 24268 MiB GPUs: exactly 10 fit.
check_failover() {
  local leader new i placed deadline
  holder() { k -n "$ns" get lease tessera-scheduler -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
  leader=$(holder)
  check "a scheduler replica leads ($leader) and its pod carries the leader label" test \
    "$(k -n "$ns" get pod "$leader" -o 'jsonpath={.metadata.labels.tessera\.io/scheduler-leader}')" = true
  for i in $(seq 0 13); do
    workload_pod "failover-$i" '{"nodeSelector":{"kubernetes.io/hostname":"node-a"},"restartPolicy":"Never"}' \
      main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":4096}' 'sleep 120' | k create -f - >/dev/null
    k label pod "failover-$i" tessera-test=failover >/dev/null
    if ((i == 4)); then
      k -n "$ns" delete pod "$leader" --wait=false >/dev/null
      echo "  deleted the leading replica $leader after 5 of the 14 pods"
    fi
  done
  placed_now() {
    k get pods -l tessera-test=failover -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
  }
  deadline=$((SECONDS + 180))
  until (($(placed_now) >= 10)) || ((SECONDS > deadline)); do sleep 1; done
  sleep 10  # any placement beyond the 10 would show by now
  placed=$(placed_now)
  new=$(holder)
  check "another replica leads now ($new)" test -n "$new" -a "$new" != "$leader"
  check "exactly the 10 pods that fit were placed, across the failover ($placed)" test "$placed" = 10
  check "no GPU holds more than it has" no_gpu_overcommitted tessera-test=failover
  k delete pods -l tessera-test=failover --wait=true >/dev/null
}

# Least privilege, by running the parts: none of them was refused a call; and by asking the API
# server what each ServiceAccount may do: what no part calls is refused.
check_rbac() {
  local pod
  for pod in $(k -n "$ns" get pods -o name); do
    check "$pod was refused no call (no 403 in its log)" \
      bash -c "! '$kubectl' -n '$ns' logs '$pod' --all-containers 2>&1 | grep -Eiq 'forbidden|\"code\":403| 403 '"
  done
  local sa line verb resource extra
  while read -r sa verb resource extra; do
    [[ -z $sa || $sa == \#* ]] && continue
    # shellcheck disable=SC2086
    check "$sa may not $verb $resource $extra" bash -c \
      "[[ \$('$kubectl' auth can-i --as=system:serviceaccount:$ns:$sa $verb $resource $extra 2>/dev/null) == no ]]"
  done <<EOT
tessera-scheduler get secrets -n $ns
tessera-scheduler create pods -n default
tessera-scheduler patch nodes
tessera-scheduler update mutatingwebhookconfigurations/tessera
tessera-scheduler update leases/another -n $ns
tessera-scheduler update pods -n default
tessera-node get secrets -n $ns
tessera-node create pods/binding -n default
tessera-node delete pods -n default
tessera-node update nodes
tessera-certgen get secrets/tessera-annotation-key -n $ns
tessera-certgen delete secrets/tessera-scheduler-tls -n $ns
tessera-certgen list secrets -n $ns
tessera-certgen update validatingwebhookconfigurations/another
tessera-certgen list pods -n $ns
tessera-kube-scheduler get secrets -n $ns
tessera-kube-scheduler update mutatingwebhookconfigurations/tessera
tessera-kube-scheduler update leases/another -n $ns
EOT
}

# snapshot_nodes FILE: the files of every node (its /var, /run and /usr/local), but for those of
# kubelet (but its device-plugins folder, where Tessera's sockets are), containerd and the pods,
# which come and go with every pod, and the driver's.
snapshot_nodes() {
  local node
  for node in "${nodes[@]}"; do
    (cd "$cluster_dir/nodes/$node" && find var run usr-local -xdev \
      \( -path 'var/lib/kubelet/*' ! -path 'var/lib/kubelet/device-plugins*' \
      -o -path var/lib/kubelet/device-plugins/kubelet_internal_checkpoint \
      -o -path var/lib/containerd -o -path var/log \
      -o -path var/lib/cni -o -path run/containerd -o -path run/simgpu -o -path run/nvidia \) -prune \
      -o -print | sed "s#^#$node/#")
  done | sort >"$1"
}

# check_nodes_clean BEFORE: after an uninstall, every file the nodes have that they did not have
# before is in a state folder docs/install.md names (/var/lib/tessera, /usr/local/lib/tessera,
# /var/run/cdi, which is /run/cdi), and no node's /etc/ld.so.preload names Tessera's library.
check_nodes_clean() {
  snapshot_nodes "$work/after"
  local left
  left=$(comm -13 "$1" "$work/after" | grep -Ev '^[^/]+/(var/lib/tessera|usr-local/lib/tessera|run/cdi)(/|$)' || true)
  check "no file left outside the documented state folders${left:+: $left}" test -z "$left"
  echo "  left in the state folders (docs/install.md, Uninstall, removes them):"
  comm -13 "$1" "$work/after" | sed -E 's#^([^/]+)/(var/lib/tessera|usr-local/lib/tessera|run/cdi)/.*#\1/\2#' | sort | uniq -c | sed 's/^/   /'
  check "no /etc/ld.so.preload names libtessera-cuda.so" \
    bash -c "! grep -qs tessera /etc/ld.so.preload"
}

# check_uninstalled: nothing of Tessera is left in the API: no object of its names or its label,
# no node annotation or label of it.
check_uninstalled() {
  local deadline=$((SECONDS + 120)) left
  while k get namespace "$ns" >/dev/null 2>&1 && ((SECONDS < deadline)); do sleep 1; done
  check "namespace $ns is gone" bash -c "! '$kubectl' get namespace '$ns' >/dev/null 2>&1"
  left=$(k get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations \
    -o name | grep -i tessera || true)
  check "no cluster-wide object of Tessera is left${left:+: $left}" test -z "$left"
  left=$(k get all,roles,rolebindings,configmaps,secrets,serviceaccounts,leases -A \
    -l app.kubernetes.io/part-of=tessera -o name 2>/dev/null || true)
  left+=$(k -n kube-system get rolebindings -o name | grep -i tessera || true)
  check "no namespaced object of Tessera is left${left:+: $left}" test -z "$left"
  left=$(k get nodes -o json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["items"]:
    m = n["metadata"]
    for k in list(m.get("annotations", {})) + list(m.get("labels", {})):
        if k.startswith("tessera.io/"):
            print(m["name"], k)')
  check "no node carries a tessera.io annotation or label${left:+: $left}" test -z "$left"
}

# The nodes' label and annotations of Tessera go, as docs/install.md says.
forget_nodes() {
  k label node "${nodes[@]}" tessera.io/enabled- tessera.io/gpu-node- >/dev/null
  k annotate node "${nodes[@]}" tessera.io/gpus- tessera.io/gpus-signature- >/dev/null
}
