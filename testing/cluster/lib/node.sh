# A node of the dev cluster. Its programs (containerd, kubelet, the Tessera node agent) run in the
# node's own network namespace and its own mount namespace, in which /var, /run and /usr/local are
# the node's folders <dir>/nodes/<node>/{var,run,usr-local}: so each node has the standard paths
# (/var/lib/kubelet, /run/containerd, /var/log/pods, /var/lib/tessera, /usr/local/lib/tessera,
# /var/run/cdi) to itself, as a machine of its own would, and kubelet's device-plugin folder,
# which is always /var/lib/kubelet/device-plugins, is not shared. Sourced.

# The cgroup v1 hierarchies (where the node's cgroup root is made).
cgroup_controllers() {
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [[ $d == */unified ]] && continue
    [[ -f $d/cgroup.procs ]] && echo "$d"
  done
}

# Every hierarchy, the cgroup2 one of a hybrid machine too: kubelet makes the node's folders there
# as well, and `down` removes them.
cgroup_hierarchies() {
  cgroup_controllers
  [[ -f /sys/fs/cgroup/unified/cgroup.procs ]] && echo /sys/fs/cgroup/unified
  return 0
}

# The node's cgroup root (kubelet puts kubepods under it) in every v1 hierarchy; cpuset needs its
# cpus and mems before a task can join.
make_node_cgroups() {
  local root=$1 d
  for d in $(cgroup_controllers); do
    mkdir -p "$d$root"
    if [[ $(basename "$d") == cpuset ]]; then
      cat "$d/cpuset.cpus" >"$d$root/cpuset.cpus"
      cat "$d/cpuset.mems" >"$d$root/cpuset.mems"
    fi
  done
}

# The folder that keeps the nodes' mount namespaces: a private mount, as the kernel requires.
make_mountns_home() {
  mkdir -p "$dir/ns"
  mount --bind "$dir/ns" "$dir/ns"
  mount --make-private "$dir/ns"
}

# The node's mount namespace, kept by a bind mount of it at $dir/ns/<node>, with the node's
# folders over /var, /run and /usr/local.
make_node_mountns() {
  local node=$1 nd ns
  nd=$(node_dir "$node")
  ns=$(node_mountns "$node")
  mkdir -p "$nd/var/lib" "$nd/var/log" "$nd/run" "$nd/usr-local/lib/tessera" "$nd/usr-local/bin"
  ln -sfn /run "$nd/var/run"
  touch "$ns"
  unshare --mount="$ns" --propagation private true
  nsenter --mount="$ns" -- sh -c "mount --bind '$nd/var' /var && mount --bind '$nd/run' /run &&
    mount --bind '$nd/usr-local' /usr/local" || die "$node: could not set up its mount namespace"
  if ((${agent_state_tmpfs:-0})); then
    mkdir -p "$nd/var/lib/tessera" "$nd/run/cdi"
    nsenter --mount="$ns" -- sh -c "mount -t tmpfs -o mode=0755 tessera-state /var/lib/tessera &&
      mount -t tmpfs -o mode=0755 tessera-cdi /var/run/cdi" ||
      die "$node: could not mount the tmpfs of --agent-state-tmpfs"
  fi
}

# The GPU driver of a node: simgpu's libraries, its state folder (the "hardware", /run/simgpu in
# the node), the device nodes that the node agent names in its CDI specs (made under the node's
# driver root, with NVIDIA's major numbers, so containers get them as on a GPU node), and the
# driver daemon that knows each process's host PID (it shares the host's PID namespace, like the
# kernel module). The driver root is /run/nvidia/driver in the node, where NVIDIA's driver
# container puts it (and, as there, a reboot empties it). Sockets are reached by their short
# paths inside the node: a unix socket's path may not exceed 107 bytes, and <dir> can be long.
driver_root=/run/nvidia/driver
make_node_driver() {
  local node=$1 nd
  nd=$(node_dir "$node")
  local driver=$nd$driver_root
  # A reboot makes the nodes again.
  rm -rf "$driver/dev"
  mkdir -p "$driver/dev" "$driver/lib" "$nd/run/simgpu"
  cp "$tessera_build/lib/simgpu/libcuda.so.1" "$tessera_build/lib/simgpu/libnvidia-ml.so.1" "$driver/lib/"
  local i count
  count=$(gpu_count "$node")
  for ((i = 0; i < count; i++)); do mknod -m 0666 "$driver/dev/nvidia$i" c 195 "$i"; done
  mknod -m 0666 "$driver/dev/nvidiactl" c 195 255
  mknod -m 0666 "$driver/dev/nvidia-uvm" c 511 0
  mknod -m 0666 "$driver/dev/nvidia-uvm-tools" c 511 1
  start "$node-simgpu-driver" --node "$node" --env "SIMGPU_STATE=/run/simgpu" \
    --env "SIMGPU_DEVICES=${node_gpus[$node]}" -- "$tessera_build/bin/simgpu" driver
  wait_for "$node-simgpu-driver" 20 "driver socket" test -S "$nd/run/simgpu/driver.sock"
  make_node_sysfs "$node"
}

# The node's sysfs for simgpu's GPUs, under the driver root (the agent's --node.sysfs-root): each
# GPU's link bus/pci/devices/<bus ID> -> ../../../devices/pci0000:00/0000:00:01.0/<bus ID>, as the
# kernel lays out a PCI device, so that the agent publishes its PCIe root complex (docs/dra.md).
make_node_sysfs() {
  local node=$1 nd bdf
  nd=$(node_dir "$node")
  local sys=$nd$driver_root/sys
  rm -rf "$sys"
  mkdir -p "$sys/bus/pci/devices"
  for bdf in $(SIMGPU_STATE="$nd/run/simgpu" "$tessera_build/bin/simgpu" stat | python3 -c '
import json, sys
for d in json.load(sys.stdin)["devices"]:
    domain, rest = d["pci_bus_id"].split(":", 1)
    print((domain[-4:] + ":" + rest).lower())'); do
    mkdir -p "$sys/devices/pci0000:00/0000:00:01.0/$bdf"
    ln -s "../../../devices/pci0000:00/0000:00:01.0/$bdf" "$sys/bus/pci/devices/$bdf"
  done
}

gpu_count() {
  local spec=${node_gpus[$1]}
  [[ $spec =~ count=([0-9]+) ]] && { echo "${BASH_REMATCH[1]}"; return; }
  grep -o 'gpu=' <<<"$spec" | wc -l
}

# containerd's base OCI spec for the node: its default spec plus what the NVIDIA container runtime
# adds on a GPU node, the driver's libraries and (for simgpu) the state folder they share.
write_base_spec() {
  local node=$1 nd
  nd=$(node_dir "$node")
  "$bin/ctr" oci spec >"$nd/containerd-base-spec.json"
  python3 - "$nd/containerd-base-spec.json" "$driver_root" <<'PY'
import json, sys
path, driver = sys.argv[1], sys.argv[2]
spec = json.load(open(path))
lib = "/usr/lib/x86_64-linux-gnu"
for name in ("libcuda.so.1", "libnvidia-ml.so.1"):
    spec["mounts"].append({"destination": f"{lib}/{name}", "type": "bind",
                           "source": f"{driver}/lib/{name}", "options": ["rbind", "ro"]})
spec["mounts"].append({"destination": "/run/simgpu", "type": "bind", "source": "/run/simgpu",
                       "options": ["rbind", "rw"]})
# As the kernel module, simgpu shows a container only the GPUs whose device nodes it was given.
spec["process"].setdefault("env", []).extend(["SIMGPU_STATE=/run/simgpu", "SIMGPU_DEV_ROOT=/"])
json.dump(spec, open(path, "w"), indent=1)
PY
}

# The node's containerd configuration, at containerd's default paths inside the node.
write_containerd_config() {
  local node=$1 nd
  nd=$(node_dir "$node")
  mkdir -p "$nd/cni/net.d" "$nd/var/lib/cni" "$nd/run/cdi" "$nd/etc"
  write_base_spec "$node"
  cat >"$nd/cni/net.d/10-tessera.conflist" <<EOT
{
  "cniVersion": "1.0.0",
  "name": "tessera-$node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$(node_pod_cidr "$node")"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOT
  cat >"$nd/etc/containerd.toml" <<EOT
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'tessera.local/pause:3.10'

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ['/var/run/cdi']
  # kubelet asks for oom_score_adj -998 (sandboxes) and below; lowering it needs CAP_SYS_RESOURCE,
  # which root does not have on these machines: keep containers at containerd's own value or above.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    base_runtime_spec = '$nd/containerd-base-spec.json'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = '$(command -v runc)'
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['$cni_bin']
    conf_dir = '$nd/cni/net.d'
EOT
}

# ctr NODE ARGS...: ctr against the node's containerd, from inside the node.
node_ctr() {
  local node=$1
  shift
  nsenter "--mount=$(node_mountns "$node")" -- "$bin/ctr" --address /run/containerd/containerd.sock "$@"
}

start_containerd() {
  local node=$1 nd
  nd=$(node_dir "$node")
  write_containerd_config "$node"
  start "$node-containerd" --node "$node" --env "PATH=$bin:$PATH" \
    -- "$bin/containerd" --config "$nd/etc/containerd.toml"
  wait_for "$node-containerd" 60 "containerd socket" \
    node_ctr "$node" version
  local image
  for image in "$dir/images"/*.tar; do import_image "$node" "$image"; done
  log "ok: $node containerd, images imported"
}

# import_image NODE ARCHIVE: an OCI image archive into the node's containerd (kubelet's namespace).
import_image() {
  node_ctr "$1" -n k8s.io images import "$2" >>"$logs/$1-containerd.log" 2>&1 ||
    die "$1: importing $2 into containerd failed (log: $logs/$1-containerd.log)"
}

write_kubelet_config() {
  local node=$1 nd
  nd=$(node_dir "$node")
  cat >"$nd/etc/kubelet.yaml" <<EOT
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_ip "$node")
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $pki/kubelet-$node-serving.crt
tlsPrivateKeyFile: $pki/kubelet-$node-serving.key
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
# Each node's pods under a cgroup of their own, so that neither kubelet removes the other's.
cgroupRoot: /tsr$net-$node
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
# This machine has cgroup v1 hierarchies only (docs/dev-cluster.md).
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
# CoreDNS (lib/dns.sh); pods of dnsPolicy Default get no name server, nothing outside answers.
clusterDNS: ["$dns_ip"]
resolvConf: ""
# Nothing here can pull an image; the cluster's images are imported and must never be collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
serializeImagePulls: false
# Device plugins' capacity reaches the node's status at the next update: every 2 s, not 10.
nodeStatusUpdateFrequency: 2s
maxPods: 60
EOT
}

start_kubelet() {
  local node=$1 nd
  nd=$(node_dir "$node")
  write_kubelet_config "$node"
  make_node_cgroups "/tsr$net-$node"
  # Labelled for the node agent; with --tessera none the installer labels them (docs/install.md).
  local labels=()
  [[ $tessera_mode == host ]] && labels=(--node-labels=tessera.io/enabled=true)
  start "$node-kubelet" --node "$node" --env "PATH=$bin:$PATH" \
    -- "$bin/kubelet" --config="$nd/etc/kubelet.yaml" \
    --kubeconfig="$kubeconfigs/kubelet-$node.kubeconfig" \
    --hostname-override="$node" --node-ip="$(node_ip "$node")" "${labels[@]}" --v=1
  wait_for "$node-kubelet" 120 "Ready node" node_ready "$node"
  log "ok: $node kubelet registered, node Ready"
}

node_ready() {
  [[ $(kubectl_admin get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

# The API server's TaintNodesByCondition admission gives every new node the taint
# node.kubernetes.io/not-ready:NoSchedule, which the node lifecycle controller lifts once the node
# is Ready. A cluster started without that controller (DEV_CLUSTER_CONTROLLERS, as scripts/bench's
# scale run starts one) keeps it, and CoreDNS is never placed: lift it here from the Ready nodes.
lift_not_ready_taints() {
  [[ ${DEV_CLUSTER_CONTROLLERS:-*} == *-node-lifecycle-controller* ]] || return 0
  local node
  for node in "${nodes[@]}"; do
    kubectl_admin get node "$node" -o 'jsonpath={.spec.taints[*].key}' | grep -qw node.kubernetes.io/not-ready ||
      continue
    kubectl_admin taint nodes "$node" node.kubernetes.io/not-ready:NoSchedule- >/dev/null ||
      die "could not lift the not-ready taint from $node"
  done
}
