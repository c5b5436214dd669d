# The dev cluster's network: a bridge on the host (10.N.0.1, where the API server and the Tessera
# scheduler listen) and one network namespace per node (10.N.0.1x), joined to it by a veth pair;
# each node's pods get 10.N.<node index>.0/24 from the CNI bridge plugin inside the node's
# namespace. Sourced.

make_network() {
  ip link add "$bridge" type bridge
  ip addr add "$host_ip/24" dev "$bridge"
  ip link set "$bridge" up
  local node i ns
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
    # The host reaches the node's pods through the node.
    ip route add "10.$net.$i.0/24" via "$(node_ip "$node")" dev "$bridge"
  done
  log "ok: network $bridge ($host_ip/24), one namespace per node"
}

remove_network() {
  local node
  for node in "${nodes[@]}"; do
    # The veth pair goes now: with the namespace alone it would go when the kernel frees the
    # namespace, which it does later and asynchronously (a next `up` found tsrNh1 still there).
    ip link del "tsr${net}h$(node_index "$node")" 2>/dev/null || true
    ip netns del "$(node_netns "$node")" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}
