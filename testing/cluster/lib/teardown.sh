# Taking the dev cluster down, and checking that nothing of it is left outside its folder. Sourced.

# kubelet sets these on start (pkg/kubelet/cm/container_manager_linux.go); `down` puts back what
# the machine had.
kubelet_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

save_sysctls() {
  [[ -f $dir/sysctl.saved ]] && return
  local k
  for k in "${kubelet_sysctls[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$dir/sysctl.saved"
}

restore_sysctls() {
  [[ -f $dir/sysctl.saved ]] || return 0
  sysctl -q -p "$dir/sysctl.saved" >/dev/null 2>&1 || true
  rm -f "$dir/sysctl.saved"
}

# Every process of a node's containers is in the node's cgroup tree (the pids hierarchy holds them
# all): kill them until the tree is empty.
kill_node_containers() {
  local root=/sys/fs/cgroup/pids/tsr$net-$1 tries
  [[ -d $root ]] || return 0
  for ((tries = 0; tries < 50; tries++)); do
    local procs
    # find fails when a cgroup goes while it reads the tree (kubelet and containerd remove theirs
    # as their processes end); under errexit that ended the node's whole teardown, and its
    # containerd, simgpu driver and cgroups stayed behind.
    procs=$(find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null) || true
    [[ -z $procs ]] && return 0
    kill -KILL $procs 2>/dev/null || true
    sleep 0.1
  done
}

remove_node_cgroups() {
  local d
  for d in $(cgroup_hierarchies); do
    # A cgroup that cannot go yet (a process still in it) is listed by `leftovers`.
    [[ -d $d/tsr$net-$1 ]] && { find "$d/tsr$net-$1" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
  done
  return 0
}

# Every process that lives in the node's mount or network namespace (containerd, its runc shims,
# which outlive containerd by design, anything a component left; a shim may have a mount
# namespace of its own, never a network namespace of its own).
kill_node_namespace() {
  # Not `net`: a local of that name hid the cluster's $net from node_netns, and the network
  # namespace was never matched.
  local mnt_ino="" net_ino="" p
  mnt_ino=$(stat -Lc %i "$(node_mountns "$1")" 2>/dev/null) || mnt_ino=""
  net_ino=$(stat -Lc %i "/run/netns/$(node_netns "$1")" 2>/dev/null) || net_ino=""
  [[ -n $mnt_ino || -n $net_ino ]] || return 0
  for p in /proc/[0-9]*; do
    if [[ -n $mnt_ino && $(stat -Lc %i "$p/ns/mnt" 2>/dev/null) == "$mnt_ino" ]] ||
      [[ -n $net_ino && $(stat -Lc %i "$p/ns/net" 2>/dev/null) == "$net_ino" ]]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true  # it may have exited since
    fi
  done
  return 0
}

stop_node() {
  local node=$1
  stop "$node-tessera-node"
  stop "$node-kube-proxy"
  stop "$node-kubelet"
  kill_node_containers "$node"
  stop "$node-containerd"
  kill_node_namespace "$node"
  stop "$node-simgpu-driver"
  remove_node_cgroups "$node"
  # The namespace goes, and every mount in it (container root file systems, pod volumes), with its
  # last process and this bind mount.
  umount "$(node_mountns "$node")" 2>/dev/null || true
  return 0
}

# What of the cluster on --net can be found without its record (the programs' PIDs): containers,
# processes in the nodes' namespaces, cgroups, mounts under the folder, the network.
sweep_net() {
  local node pid
  # The control plane's programs name their files under <dir> (not this script, run with --dir).
  for pid in $(ps -eo pid=,args= | grep -F -- "$dir/" | grep -v -e grep -e tessera-dev-cluster | awk '{print $1}'); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for node in "${nodes[@]}"; do
    kill_node_containers "$node"
    kill_node_namespace "$node"
    remove_node_cgroups "$node"
    umount "$(node_mountns "$node")" 2>/dev/null || true
  done
  unmount_all
  remove_network
}

unmount_all() {
  local m i
  for ((i = 0; i < 5; i++)); do
    mapfile -t mounts < <(findmnt -rn -o TARGET | grep -F "$dir/" | sort -r)
    ((${#mounts[@]} == 0)) && return 0
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
}

cluster_down() {
  local node
  for name in tessera-kube-scheduler tessera-scheduler kube-scheduler; do stop "$name"; done
  # Only the nodes' jobs: the control plane's processes may be this shell's children too (an `up`
  # that failed), and a bare `wait` would wait for them.
  local stopping=()
  for node in "${nodes[@]}"; do
    stop_node "$node" &
    stopping+=($!)
  done
  wait "${stopping[@]}"
  for name in kube-controller-manager kube-apiserver etcd; do stop "$name"; done
  unmount_all
  remove_network
  restore_sysctls
  # What is big and no longer needed; logs/ stays for reading, with the containers' logs.
  for node in "${nodes[@]}"; do
    [[ -d $(node_dir "$node")/var/log/pods ]] && cp -r "$(node_dir "$node")/var/log/pods" "$logs/$node-pods"
  done
  find "$dir" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
}

# Prints what the cluster left behind outside its folder (or still running); empty when clean.
leftovers() {
  local node
  ps -eo pid=,args= | grep -F -- "$dir/" | grep -v -e grep -e "tessera-dev-cluster" | sed 's/^/process: /'
  findmnt -rn -o TARGET | grep -F "$dir/" | sed 's/^/mount: /'
  ip link show "$bridge" >/dev/null 2>&1 && echo "network device: $bridge"
  ip route show "$service_cidr" | sed 's/^/route: /'
  ip -o link show | grep -o "tsr${net}h[0-9]*" | sed 's/^/network device: /'
  for node in "${nodes[@]}"; do
    [[ -e /run/netns/$(node_netns "$node") ]] && echo "network namespace: $(node_netns "$node")"
    local d
    for d in $(cgroup_hierarchies); do [[ -d $d/tsr$net-$node ]] && echo "cgroup: $d/tsr$net-$node"; done
  done
  return 0
}
