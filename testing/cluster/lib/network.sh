# The dev cluster's network: a bridge on the host (10.N.0.1, where the API server and the Tessera
# scheduler listen) and one network namespace per node (10.N.0.1x), joined to it by a veth pair;
# each node's pods get 10.N.<node index>.0/24 from the CNI bridge plugin inside the node's
# namespace. Pods reach other nodes' pods through routes between the nodes (each node is the
# gateway to its own pods, as a host-gw network does); Services are kube-proxy's, per node, in
# iptables mode; the host reaches Service IPs through the nodes. Sourced.

make_network() {
  ip link add "$bridge" type bridge
  # The bridge names its cluster's folder: a later `up` on the same --net tells a dead cluster's
  # network (every process killed, e.g. with the session that ran it) from a live one.
  ip link set "$bridge" alias "$bridge_owner_prefix$dir"
  ip addr add "$host_ip/24" dev "$bridge"
  ip link set "$bridge" up
  local node other i ns nexthops=()
  for node in "${nodes[@]}"; do
    i=$(node_index "$node")
    ns=$(node_netns "$node")
    ip netns add "$ns"
    ip link add "tsr${net}h$i" type veth peer name "tsr${net}n$i"
    ip link set "tsr${net}n$i" netns "$ns"
    ip link set "tsr${net}h$i" master "$bridge" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "tsr${net}n$i" name eth0
    ip -n "$ns" addr add "$(node_ip "$node")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$host_ip"
    # The node forwards its pods' packets to the other nodes, and theirs to its pods.
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    # The host reaches the node's pods through the node.
    ip route add "$(node_pod_cidr "$node")" via "$(node_ip "$node")" dev "$bridge"
    nexthops+=(nexthop via "$(node_ip "$node")" dev "$bridge")
  done
  for node in "${nodes[@]}"; do
    for other in "${nodes[@]}"; do
      [[ $other == "$node" ]] && continue
      ip -n "$(node_netns "$node")" route add "$(node_pod_cidr "$other")" via "$(node_ip "$other")" dev eth0
    done
  done
  # Host processes (the API server calling a webhook's Service, a test's curl) reach Service IPs
  # through any node's kube-proxy, as a control-plane machine running kube-proxy would itself.
  ip route add "$service_cidr" "${nexthops[@]}"
  log "ok: network $bridge ($host_ip/24), one namespace per node, pod routes between the nodes"
}

bridge_owner_prefix=tessera-dev-cluster:

# The folder of the cluster whose bridge is on --net, from the bridge's alias; fails when the
# bridge is not there or not one of ours (no alias: another program's, or too long a folder).
bridge_owner() {
  local alias
  alias=$(cat "/sys/class/net/$bridge/ifalias" 2>/dev/null) || return 1
  [[ $alias == "$bridge_owner_prefix"/* ]] || return 1
  echo "${alias#"$bridge_owner_prefix"}"
}

# Whether anything of the cluster in folder $1 on --net still runs: a process naming the folder
# (its control plane, kubelets, containerds, an `up` or `down` of it) or any process in one of
# the --net's node network namespaces.
cluster_alive() {
  local owner=$1 ns p ino inos=()
  # The folder goes to awk in its environment, not as an argument, or awk would find itself; this
  # script and its subshells (whose arguments may name the folder too) are not counted.
  ps -eo args= | OWNER="$owner/" SELF="$(ps -o args= -p $$)" \
    awk '$0 != ENVIRON["SELF"] && index($0, ENVIRON["OWNER"]) { found = 1 } END { exit !found }' && return 0
  for ns in /run/netns/"tsr$net"-*; do
    [[ -e $ns ]] && inos+=("$(stat -Lc %i "$ns")")
  done
  ((${#inos[@]})) || return 1
  for p in /proc/[0-9]*; do
    ino=$(stat -Lc %i "$p/ns/net" 2>/dev/null) || continue
    for ns in "${inos[@]}"; do [[ $ino == "$ns" ]] && return 0; done
  done
  return 1
}

# `up` on a --net whose bridge is there: a dead cluster's network (none of its processes runs) is
# swept, as `down` would have; a live cluster's, or a bridge that is not ours, is refused.
reclaim_network() {
  ip link show "$bridge" >/dev/null 2>&1 || return 0
  local owner
  owner=$(bridge_owner) || die "network device $bridge exists and is not a dev cluster's: another program uses --net $net (give another --net)"
  cluster_alive "$owner" && die "network device $bridge exists: the cluster in $owner uses --net $net and runs (take it down, or give another --net)"
  log "a dead cluster's network is on --net $net (folder $owner, none of its processes runs): sweeping it"
  (
    dir=$owner
    paths
    # Its nodes, from what they left: network namespaces and cgroups named tsrN-<node>.
    local found link
    found=$(ls /run/netns /sys/fs/cgroup/*/ 2>/dev/null | sed -n "s/^tsr$net-//p" | sort -u)
    mapfile -t nodes <<<"$found"
    [[ -n $found ]] || nodes=()
    sweep_net
    restore_sysctls
    # Host ends of veth pairs whose node was not found (their index is the node's place in `up`).
    for link in $(ip -o link show | grep -o "tsr${net}h[0-9]*" | sort -u); do ip link del "$link" 2>/dev/null || true; done
  )
  ! ip link show "$bridge" >/dev/null 2>&1 || die "network device $bridge is still there after sweeping the dead cluster of $owner"
}

remove_network() {
  local node
  ip route del "$service_cidr" 2>/dev/null || true
  for node in "${nodes[@]}"; do
    # The veth pair goes now: with the namespace alone it would go when the kernel frees the
    # namespace, which it does later and asynchronously (a next `up` found tsrNh1 still there).
    ip link del "tsr${net}h$(node_index "$node")" 2>/dev/null || true
    ip netns del "$(node_netns "$node")" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

# kube-proxy of a node, in the node's network namespace (its iptables rules are the namespace's
# own), after kubelet registered the Node it reads its address from.
start_kube_proxy() {
  local node=$1 nd
  nd=$(node_dir "$node")
  cat >"$nd/etc/kube-proxy.yaml" <<EOT
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kubeconfigs/kube-proxy.kubeconfig
hostnameOverride: $node
mode: iptables
# Traffic to a Service that did not come from this node's pod bridge (the host, another node) is
# masqueraded, so that its replies come back through this node's connection tracking.
detectLocalMode: BridgeInterface
detectLocal:
  bridgeInterface: cni0
iptables:
  localhostNodePorts: false
# The conntrack table's size and timeouts are the host's: left as they are (0).
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
# Lowering it below 0 needs CAP_SYS_RESOURCE, which root lacks here (docs/dev-cluster.md).
oomScoreAdj: 0
EOT
  start "$node-kube-proxy" --node "$node" -- "$bin/kube-proxy" --config="$nd/etc/kube-proxy.yaml" --v=1
  wait_for "$node-kube-proxy" 60 "synced Service rules" \
    curl -sf --max-time 2 "http://$(node_ip "$node"):10256/healthz"
  log "ok: $node kube-proxy (iptables)"
}
