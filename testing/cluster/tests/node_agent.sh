#!/usr/bin/env bash
# The node agent on a real kubelet and containerd: the pids file of a running GPU container holds
# its processes' host PIDs and their PIDs in the container (found through the container's real
# cgroup under kubelet's cgroup root); after a kubelet restart the device plugins register again
# and the pod keeps running; after an agent restart the container's limits are still there; when
# the pod is gone, housekeeping removes its allocation's files.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
pod=test-node-agent

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
example_pod vgpu-pod.yaml "$pod" | python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["spec"]["terminationGracePeriodSeconds"] = 1
pod["spec"]["containers"][0]["command"] = ["/bin/sh", "-c", "tessera-demo-workload; exec sleep 3600"]
print(json.dumps(pod))' | k create -f - >/dev/null
check "the pod runs" k wait --for=condition=Ready "pod/$pod" --timeout=120s
node=$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')
nd=$cluster_dir/nodes/$node
id=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocated}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["main"]["allocation"])')
alloc=$nd/var/lib/tessera/allocations/$id
echo "  pod on $node, allocation $id"
check "its limits file holds the decision" grep -q '^memory.0=4294967296$' "$alloc/limits"

# The container's processes, from its cgroup as kubelet made it.
cid=$(k get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].containerID}')
cid=${cid#containerd://}
procs=$(find /sys/fs/cgroup/pids -path "*/$cid/cgroup.procs" -exec cat {} + | sort -n | tr '\n' ' ')
check "the container's cgroup is under kubelet's cgroup root (pids: $procs)" test -n "$procs"
pids_ok() {
  local p
  for p in $procs; do
    local own
    own=$(awk '/^NSpid:/ {print $NF}' "/proc/$p/status")
    grep -qx "$p $own" "$alloc/pids" || return 1
  done
}
deadline=$((SECONDS + 10))
until pids_ok || ((SECONDS > deadline)); do sleep 0.5; done
check "the pids file names each host PID with its PID in the container" pids_ok
sed 's/^/  pids | /' "$alloc/pids"

count_registrations() { grep -c '"msg":"registered with kubelet","resource":"nvidia.com/gpu"' "$cluster_dir/logs/$node-tessera-node.log"; }
before=$(count_registrations)
"$harness" restart --dir "$cluster_dir" "$node" kubelet >/dev/null
registered() { (($(count_registrations) > before)); }
deadline=$((SECONDS + 60))
until registered || ((SECONDS > deadline)); do sleep 0.5; done
check "after a kubelet restart the device plugins registered again" registered
allocatable() { [[ $(k get node "$node" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}') =~ ^[1-9] ]]; }
deadline=$((SECONDS + 60))
until allocatable || ((SECONDS > deadline)); do sleep 0.5; done
check "and kubelet counts their devices again" allocatable
check "the pod still runs" test "$(k get pod "$pod" -o 'jsonpath={.status.phase}')" = Running

"$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null
check "after an agent restart the container's limits file is still there" \
  grep -q '^memory.0=4294967296$' "$alloc/limits"

k delete pod "$pod" --wait=true >/dev/null
# Housekeeping runs every node.housekeeping-interval (30 s).
deadline=$((SECONDS + 75))
until [[ ! -e $alloc ]] || ((SECONDS > deadline)); do sleep 1; done
check "housekeeping removed the allocation's files once the pod was gone" test ! -e "$alloc"
check "and its CDI spec" test ! -e "$nd/run/cdi/tessera.io-container-$id.json"
finish
