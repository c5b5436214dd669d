#!/usr/bin/env bash
# DRA (docs/dra.md) on the real kube-scheduler, kubelet and containerd: node-a's agent is restarted
# in DRA mode (node.mode=dra) and publishes a ResourceSlice of its two 24268 MiB GPUs with
# consumable capacity; kube-scheduler itself allocates the claims and kubelet prepares them through
# the agent's DRA plugin. Two pods that each claim 8Gi share one GPU, a third that claims 16Gi goes
# to the other, each container's NVML total and out-of-memory boundary match its claim and the
# cores are held; a claim shared by two pods is one limit for both; deleting pods frees their
# capacity for the next; kubelet restarted with prepared claims; a GPU that is lost is tainted in
# the slice, and a claim for it waits until the taint goes; a HAMi pod spec through the webhook's
# DRA mode (its GPU selection as CEL selectors) and a vcuda one with elastic compute (a GpuConfig); a monitoring pod with adminAccess
# on a GPU that tenants hold sees it whole, without the library; a claim the driver could not
# prepare is refused when it is created; a claim of two requests whose constraint aligns their GPUs
# on one PCIe root (matchAttribute resource.kubernetes.io/pcieRoot) waits while the roots differ and
# runs once they match, each container seeing only the GPU of the request it names and its limit.
# Then the agent is restarted as before.
source "$(dirname "$0")/lib.sh"
harness=$repo/testing/cluster/tessera-dev-cluster
node=node-a
nd=$cluster_dir/nodes/$node
build=$(sed -n 's/^declare -- tessera_build="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
driver=gpu.tessera.io
pods=(dra-a dra-b dra-c dra-d dra-s1 dra-s2 dra-e dra-t dra-hami dra-vcuda dra-two)
# node-a's sysfs tree (make_node_sysfs in testing/cluster/lib/node.sh): every GPU under pci0000:00.
sys=$nd/run/nvidia/driver/sys

cleanup() {
  k delete namespace dra-monitoring --ignore-not-found --wait=true >/dev/null 2>&1
  k delete pod "${pods[@]}" --ignore-not-found --wait=true >/dev/null 2>&1
  k delete resourceclaim dra-shared dra-bad dra-two --ignore-not-found --wait=true >/dev/null 2>&1
  k delete resourceclaimtemplate dra-8g dra-16g dra-20g dra-on-gpu1 --ignore-not-found >/dev/null 2>&1
}
# set_pcie_root BUS_ID ROOT: the GPU's sysfs link points under the root complex ROOT.
set_pcie_root() {
  mkdir -p "$sys/devices/$2/${2#pci}:01.0/$1"
  ln -sfn "../../../devices/$2/${2#pci}:01.0/$1" "$sys/bus/pci/devices/$1"
}
restore() {
  cleanup
  SIMGPU_STATE=$nd/run/simgpu "$build/bin/simgpu" restore 1 >/dev/null 2>&1
  for link in "$sys"/bus/pci/devices/*; do set_pcie_root "${link##*/}" pci0000:00; done
  "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null
}
trap restore EXIT
cleanup
DEV_CLUSTER_AGENT_ENV=TESSERA_NODE_MODE=dra "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null

# The node's slice: "DEVICES" as "name:memory bytes" words, sorted.
slice_devices() {
  k get resourceslices -o json | python3 -c '
import json, sys
out = []
for s in json.load(sys.stdin)["items"]:
    if s["spec"]["driver"] == sys.argv[1] and s["spec"].get("nodeName") == sys.argv[2]:
        for d in s["spec"].get("devices", []):
            taints = "".join("!" + t["key"] + ":" + t["effect"] for t in d.get("taints", []))
            out.append(d["name"] + ":" + d["capacity"]["memory"]["value"] + taints)
print(" ".join(sorted(out)))' "$driver" "$node"
}
wait_slice() { # wait_slice WANT SECONDS
  local deadline=$((SECONDS + $2))
  until [[ $(slice_devices) == "$1" ]] || ((SECONDS > deadline)); do sleep 0.5; done
  [[ $(slice_devices) == "$1" ]]
}
mem=24268Mi  # as the API server writes the quantity back
# Each of node-a's devices' standard attributes (docs/dra.md): "pciBusID/pcieRoot/numaNode ...".
standard_attributes() {
  k get resourceslices -o json | python3 -c '
import json, sys
std = "resource.kubernetes.io/"
print(" ".join(sorted(d["attributes"].get(std + "pciBusID", {}).get("string", "-") + "/" +
                      d["attributes"].get(std + "pcieRoot", {}).get("string", "-") + "/" +
                      str(d["attributes"].get(std + "numaNode", {}).get("int", "-"))
                      for s in json.load(sys.stdin)["items"]
                      if s["spec"]["driver"] == sys.argv[1] and s["spec"].get("nodeName") == sys.argv[2]
                      for d in s["spec"]["devices"])))' "$driver" "$node"
}
check "the DeviceClass $driver is installed" k get deviceclass "$driver"
check "node-a's ResourceSlice has its two GPUs with their memory ($(slice_devices))" \
  wait_slice "gpu-0:$mem gpu-1:$mem" 60
check "its devices allow multiple allocations" test "$(k get resourceslices -o json | python3 -c '
import json, sys
print(all(d.get("allowMultipleAllocations") for s in json.load(sys.stdin)["items"]
          if s["spec"]["driver"] == sys.argv[1] for d in s["spec"]["devices"]))' "$driver")" = True
check "they carry the compute capability and driver version as versions" test "$(k get resourceslices -o json | python3 -c '
import json, sys
print(" ".join(sorted({d["attributes"]["computeCapability"]["version"] + "/" + d["attributes"]["driverVersion"]["version"]
                       for s in json.load(sys.stdin)["items"] if s["spec"]["driver"] == sys.argv[1]
                       for d in s["spec"]["devices"]})))' "$driver")" = 9.0.0/580.65.6
check "and the standard PCI bus ID, PCIe root and NUMA node ($(standard_attributes))" \
  test "$(standard_attributes)" = "0000:10:00.0/pci0000:00/0 0000:18:00.0/pci0000:00/0"

# claim_object KIND NAME MEMORY [CORES [CEL]]: a ResourceClaim or ResourceClaimTemplate that asks
# for one Tessera GPU's capacity (CORES may be empty), of a device that CEL selects.
claim_object() {
  python3 - "$driver" "$@" <<'PY' | k apply -f - >/dev/null
import json, sys
driver, kind, name, memory = sys.argv[1:5]
requests = {"memory": memory}
if len(sys.argv) > 5 and sys.argv[5]:
    requests["cores"] = sys.argv[5]
exactly = {"deviceClassName": driver, "capacity": {"requests": requests}}
if len(sys.argv) > 6:
    exactly["selectors"] = [{"cel": {"expression": sys.argv[6]}}]
spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": name},
                  "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}))
PY
}
# claim_pod NAME template|claim SOURCE COMMAND: a pod on node-a whose container uses the claim.
claim_pod() {
  local key=resourceClaimTemplateName
  [[ $2 == claim ]] && key=resourceClaimName
  python3 - "$1" "$key" "$3" "$4" "$node" <<'PY' | k create -f - >/dev/null
import json, sys
name, key, source, command, node = sys.argv[1:]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
  "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
           "nodeSelector": {"kubernetes.io/hostname": node},
           "resourceClaims": [{"name": "gpu", key: source}],
           "containers": [{"name": "main", "image": "tessera.local/workload:dev",
                           "command": ["sh", "-c", command],
                           "resources": {"claims": [{"name": "gpu"}]}}]}}))
PY
}
# The workload, then the pod stays (its claim stays allocated) until deleted.
run_and_stay='tessera-demo-workload; echo workload.exit=$?; exec sleep 3600'
logs_have() { k logs "$1" 2>/dev/null | grep -q "^$2"; }
wait_logs() { # wait_logs POD KEY SECONDS
  local deadline=$((SECONDS + $3))
  until logs_have "$1" "$2" || ((SECONDS > deadline)); do sleep 1; done
  logs_have "$1" "$2"
}
# The device (gpu-N) the pod's claim got.
pod_device() {
  local claim
  claim=$(k get pod "$1" -o 'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}')
  [[ -z $claim ]] && claim=$(k get pod "$1" -o 'jsonpath={.spec.resourceClaims[0].resourceClaimName}')
  k get resourceclaim "$claim" -o 'jsonpath={.status.allocation.devices.results[0].device}'
}
check_limits() { # check_limits POD MEMORY_MIB [PERCENT]
  local logs got
  logs=$(k logs "$1" 2>&1 || true)
  echo "$logs" | sed "s/^/  $1 | /"
  check "$1: NVML reports $2 MiB" test "$(value nvml.total_mib "$logs")" = "$2"
  check "$1: allocations stopped at $2 MiB" test "$(value oom.allocated_mib "$logs")" = "$2"
  check "$1: then CUDA_ERROR_OUT_OF_MEMORY" test "$(value oom.error "$logs")" = 2
  if [[ -n ${3:-} ]]; then
    check "$1: NVML lists its process under its own PID, as nvidia-smi in the pod would" \
      test "$(value nvml.own_process_listed "$logs")" = 1
    got=$(value compute.percent "$logs")
    check "$1: held to its $3% compute share (got ${got:-nothing}%)" \
      python3 -c "import sys; g = float('${got:-0}'); sys.exit(0 if $3 / 2 <= g <= $3 + 5 else 1)"
  fi
}

echo "-- a claim the driver could not prepare is refused when it is written"
out=$(python3 - "$driver" <<'PY' | k create -f - 2>&1 || true
import json, sys
driver = sys.argv[1]
config = {"apiVersion": "gpu.tessera.io/v1", "kind": "GpuConfig", "computeMode": "elastic"}
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
  "metadata": {"name": "dra-bad"},
  "spec": {"devices": {
    "requests": [{"name": "gpu", "exactly": {"deviceClassName": driver,
                                             "capacity": {"requests": {"memory": "1Gi"}}}}],
    "config": [{"opaque": {"driver": driver, "parameters": config}}]}}}))
PY
)
echo "$out" | sed 's/^/  | /'
check "the API server refused an elastic claim without cores, with Tessera's reason" \
  grep -q "ResourceClaim default/dra-bad: request gpu: computeMode elastic needs capacity.requests.cores" <<<"$out"
check "and stored nothing" test -z "$(k get resourceclaim dra-bad -o name 2>/dev/null)"

# A claim of two requests, each on its own GPU and both on one PCIe root (the constraint a claim
# writes to align GPUs with a NIC of another driver), used by a pod whose containers name one
# request each, and both: kubelet gives each container the CDI devices of the requests it names.
echo "-- a claim of two requests aligned on one PCIe root; each container sees its request's GPU"
attribute() { # attribute DEVICE NAME: the string attribute of node-a's device
  k get resourceslices -o json | python3 -c '
import json, sys
driver, node, device, name = sys.argv[1:]
for s in json.load(sys.stdin)["items"]:
    if s["spec"]["driver"] == driver and s["spec"].get("nodeName") == node:
        for d in s["spec"]["devices"]:
            if d["name"] == device:
                print(d["attributes"].get(name, {}).get("string", "-"))' "$driver" "$node" "$1" "$2"
}
roots() { echo "$(attribute gpu-0 resource.kubernetes.io/pcieRoot) $(attribute gpu-1 resource.kubernetes.io/pcieRoot)"; }
wait_roots() { # wait_roots WANT SECONDS
  local deadline=$((SECONDS + $2))
  until [[ $(roots) == "$1" ]] || ((SECONDS > deadline)); do sleep 0.5; done
  [[ $(roots) == "$1" ]]
}
bus1=$(attribute gpu-1 resource.kubernetes.io/pciBusID)
set_pcie_root "$bus1" pci0000:80
DEV_CLUSTER_AGENT_ENV=TESSERA_NODE_MODE=dra "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null
check "with gpu-1 ($bus1) moved under another root complex, the slice says so ($(roots))" \
  wait_roots "pci0000:00 pci0000:80" 60
python3 - "$driver" "$node" <<'PY' | k create -f - >/dev/null
import json, sys
driver, node = sys.argv[1:]
def request(name, memory, cores):
    return {"name": name, "exactly": {"deviceClassName": driver,
            "capacity": {"requests": {"memory": memory, "cores": cores}}}}
claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "dra-two"},
  "spec": {"devices": {
    "requests": [request("small", "2Gi", "20"), request("large", "3Gi", "40")],
    "constraints": [{"requests": ["small", "large"], "matchAttribute": "resource.kubernetes.io/pcieRoot"},
                    {"requests": ["small", "large"], "distinctAttribute": driver + "/uuid"}]}}}
show = ('echo gpus=$(ls /dev | grep -E "^nvidia[0-9]+$" | sort | tr "\\n" " "); '
        'tessera-demo-workload --nvml-only; echo workload.exit=$?; exec sleep 3600')
def container(name, requests):
    return {"name": name, "image": "tessera.local/workload:dev", "command": ["sh", "-c", show],
            "resources": {"claims": [{"name": "gpu", "request": r} for r in requests]}}
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra-two"},
  "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
           "nodeSelector": {"kubernetes.io/hostname": node},
           "resourceClaims": [{"name": "gpu", "resourceClaimName": "dra-two"}],
           "containers": [container("small", ["small"]), container("large", ["large"]),
                          container("both", ["small", "large"])]}}
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [claim, pod]}))
PY
unschedulable() {
  [[ $(k get pod dra-two -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}') == Unschedulable ]]
}
deadline=$((SECONDS + 60))
until unschedulable || ((SECONDS > deadline)); do sleep 1; done
check "kube-scheduler cannot align them: dra-two unschedulable ($(k get pod dra-two -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'))" \
  unschedulable
check "and the claim unallocated" test -z "$(k get resourceclaim dra-two -o 'jsonpath={.status.allocation}')"
set_pcie_root "$bus1" pci0000:00
DEV_CLUSTER_AGENT_ENV=TESSERA_NODE_MODE=dra "$harness" restart --dir "$cluster_dir" "$node" tessera-node >/dev/null
check "gpu-1 back under pci0000:00 ($(roots))" wait_roots "pci0000:00 pci0000:00" 60
two_ran() { [[ $(k logs dra-two -c both 2>/dev/null) == *workload.exit=* ]]; }
deadline=$((SECONDS + 180))
until two_ran || ((SECONDS > deadline)); do sleep 1; done
check "then it is allocated and dra-two runs" two_ran || describe_pod dra-two
# Which GPU each request got, as /dev/nvidia<index>, and its memory in MiB.
got() { k get resourceclaim dra-two -o json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["status"]["allocation"]["devices"]["results"]:
    if r["request"] == sys.argv[1]:
        print("nvidia" + r["device"].split("-")[1])' "$1"; }
small=$(got small) large=$(got large)
echo "  kube-scheduler allocated: small $small, large $large"
check "the requests got two GPUs" test -n "$small" -a -n "$large" -a "$small" != "$large"
for c in small large both; do
  logs=$(k logs dra-two -c "$c" 2>&1 || true)
  echo "$logs" | sed "s/^/  dra-two\/$c | /"
  case $c in
    small) want=$small mib=2048 ;;
    large) want=$large mib=3072 ;;
    both) want=$(printf '%s\n' "$small" "$large" | sort | paste -sd ' ')
      [[ $small < $large ]] && mib=2048 || mib=3072 ;;
  esac
  check "container $c sees the GPUs of the requests it names: $want" test "$(value gpus "$logs")" = "$want"
  check "and its first GPU's limit, $mib MiB" test "$(value nvml.total_mib "$logs")" = "$mib"
done
k delete pod dra-two --wait=true >/dev/null
k delete resourceclaim dra-two --wait=true >/dev/null

echo "-- two 8Gi claims share a GPU, a 16Gi claim goes to the other"
claim_object ResourceClaimTemplate dra-8g 8Gi 30
claim_object ResourceClaimTemplate dra-16g 16Gi "" \
  "device.attributes[\"$driver\"].computeCapability.compareTo(semver(\"9.0.0\")) >= 0"
claim_object ResourceClaimTemplate dra-20g 20Gi
claim_pod dra-a template dra-8g "$run_and_stay"
claim_pod dra-b template dra-8g "$run_and_stay"
for p in dra-a dra-b; do
  check "$p ran its workload" wait_logs "$p" workload.exit=0 180 || describe_pod "$p"
done
claim_pod dra-c template dra-16g "$run_and_stay"
check "dra-c ran its workload" wait_logs dra-c workload.exit=0 180 || describe_pod dra-c
a=$(pod_device dra-a) b=$(pod_device dra-b) c=$(pod_device dra-c)
echo "  kube-scheduler allocated: dra-a $a, dra-b $b, dra-c $c"
check "dra-a and dra-b share one GPU" test -n "$a" -a "$a" = "$b"
check "dra-c got the other GPU" test -n "$c" -a "$c" != "$a"
check_limits dra-a 8192 30
check_limits dra-b 8192 30
check_limits dra-c 16384

# Administrative access (GA in 1.36) needs a namespace with the admin-access label; the device is
# allocated beside the tenants' claims and takes none of it once allocated, but kube-scheduler
# checks the request's capacity against what they hold (the default is nearly the whole GPU), so a
# monitor asks for the smallest share.
echo "-- a monitor with adminAccess sees a held GPU whole, without the library"
python3 - "$driver" "$node" <<'PY' | k apply -f - >/dev/null
import json, sys
driver, node = sys.argv[1:]
ns = "dra-monitoring"
items = [
  {"apiVersion": "v1", "kind": "Namespace",
   "metadata": {"name": ns, "labels": {"resource.kubernetes.io/admin-access": "true"}}},
  {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
   "metadata": {"name": "monitor", "namespace": ns},
   "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
     "deviceClassName": driver, "adminAccess": True,
     "capacity": {"requests": {"memory": "256Mi"}}}}]}}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "monitor", "namespace": ns},
   "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "monitor"}],
            "containers": [{"name": "main", "image": "tessera.local/workload:dev",
              "command": ["sh", "-c", "tessera-demo-workload --nvml-only; echo workload.exit=$?; "
                          "test -e /etc/ld.so.preload && echo preload=yes || echo preload=no; "
                          "exec sleep 3600"],
              "resources": {"claims": [{"name": "gpu"}]}}]}}]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
km() { k -n dra-monitoring "$@"; }
deadline=$((SECONDS + 120))
until km logs monitor 2>/dev/null | grep -q '^preload=' || ((SECONDS > deadline)); do sleep 1; done
logs=$(km logs monitor 2>&1 || true)
echo "$logs" | sed 's/^/  monitor | /'
grep -q '^workload.exit=0' <<<"$logs" || km describe pod monitor | tail -n 15
check "the monitor ran" grep -q '^workload.exit=0' <<<"$logs"
check "its claim is allocated with adminAccess" test "$(km get resourceclaim monitor \
  -o 'jsonpath={.status.allocation.devices.results[0].adminAccess}')" = true
check "NVML shows it the whole GPU, 24268 MiB, though tenants hold some" \
  test "$(value nvml.total_mib "$logs")" = 24268
check "its container has no /etc/ld.so.preload (no library, no limits)" grep -q '^preload=no' <<<"$logs"
k delete namespace dra-monitoring --wait=true >/dev/null

echo "-- deleting pods frees their capacity"
claim_pod dra-d template dra-20g "$run_and_stay"
sleep 5
check "a 20Gi claim does not fit beside them (dra-d Pending)" \
  test "$(k get pod dra-d -o 'jsonpath={.status.phase}')" = Pending
k delete pod dra-a dra-b --wait=true >/dev/null
check "once dra-a and dra-b are gone, dra-d runs" wait_logs dra-d workload.exit=0 180 ||
  describe_pod dra-d
check "on their GPU" test "$(pod_device dra-d)" = "$a"
check_limits dra-d 20480
k delete pod dra-c dra-d --wait=true >/dev/null

# One set of files for the claim, which both containers get, and one limit: each pod's processes
# are in a PID namespace of their own, and the library tells their slots in the claim's region
# alive by a file lock, not by a PID.
echo "-- one claim, two pods: one set of limits for both"
claim_object ResourceClaim dra-shared 4Gi
claim_pod dra-s1 claim dra-shared 'tessera-demo-workload --hold 3072'
check "dra-s1 holds 3072 MiB of the shared claim" wait_logs dra-s1 hold.allocated_mib=3072 120 ||
  describe_pod dra-s1
claim_pod dra-s2 claim dra-shared "$run_and_stay"
check "dra-s2 ran its workload" wait_logs dra-s2 workload.exit=0 180 || describe_pod dra-s2
logs=$(k logs dra-s2 2>&1 || true)
check "dra-s2 sees the claim's 4096 MiB" test "$(value nvml.total_mib "$logs")" = 4096
check "dra-s2 could allocate what dra-s1 left of it: 1024 MiB (got $(value oom.allocated_mib "$logs"))" \
  test "$(value oom.allocated_mib "$logs")" = 1024
check "the claim is reserved for both pods" \
  test "$(k get resourceclaim dra-shared -o 'jsonpath={.status.reservedFor[*].name}' | wc -w)" = 2
uid=$(k get resourceclaim dra-shared -o 'jsonpath={.metadata.uid}')
check "one limits file for the claim, of 4 GiB" \
  grep -q '^memory.0=4294967296$' "$nd/var/lib/tessera/allocations/$uid/limits"
check "one CDI spec for the claim" test -f "$nd/run/cdi/tessera.io-claim-$uid.json"
node_ip=$(k get node "$node" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
claim_metrics=$(curl -sf --max-time 5 "http://$node_ip:9394/metrics" | grep '^tessera_claim_memory_[a-z]*_bytes{namespace="default",claim="dra-shared",' || true)
echo "$claim_metrics" | sed 's/^/  | /'
claim_used=$(sed -n 's/^tessera_claim_memory_used_bytes{.*} //p' <<<"$claim_metrics")
check "the agent's metrics show the claim's 4 GiB limit" grep -q '^tessera_claim_memory_limit_bytes{.*} 4294967296$' <<<"$claim_metrics"
check "and the 3072 MiB dra-s1 holds of it (${claim_used:-nothing} bytes)" \
  test "${claim_used:-0}" -ge $((3072 << 20)) -a "${claim_used:-0}" -le $((4096 << 20))

echo "-- kubelet restarted with prepared claims"
republished() { grep -c "the node's ResourceSlice was deleted" "$cluster_dir/logs/$node-tessera-node.log" || true; }
wait_republished() { # wait_republished BEFORE SECONDS
  local deadline=$((SECONDS + $2))
  until (($(republished) > $1)) || ((SECONDS > deadline)); do sleep 0.5; done
  (($(republished) > $1))
}
before=$(republished)
"$harness" restart --dir "$cluster_dir" "$node" kubelet >/dev/null
# kubelet deletes its node's slices when it starts; the agent's watch publishes ours again at once
# (before, the next resync did: the node's GPUs were invisible for up to 30 s).
check "node-a's slice, deleted by kubelet at its start, is published again within 10 s" \
  wait_republished "$before" 10
check "and lists its two GPUs ($(slice_devices))" wait_slice "gpu-0:$mem gpu-1:$mem" 10
sleep 5
check "dra-s1 still runs" test "$(k get pod dra-s1 -o 'jsonpath={.status.phase}')" = Running
claim_pod dra-e template dra-8g "$run_and_stay"
check "a new claim is prepared after the restart" wait_logs dra-e workload.exit=0 180 ||
  describe_pod dra-e
check_limits dra-e 8192 30
k delete pod dra-s1 dra-s2 dra-e --wait=true >/dev/null
k delete resourceclaim dra-shared --wait=true >/dev/null

echo "-- a lost GPU is tainted in the slice"
SIMGPU_STATE=$nd/run/simgpu "$build/bin/simgpu" remove 1 >/dev/null
check "gpu-1 is tainted gpu.tessera.io/unhealthy:NoSchedule ($(slice_devices))" \
  wait_slice "gpu-0:$mem gpu-1:$mem!gpu.tessera.io/unhealthy:NoSchedule" 60
claim_object ResourceClaimTemplate dra-on-gpu1 1Gi "" 'device.attributes["gpu.tessera.io"].index == 1'
claim_pod dra-t template dra-on-gpu1 "$run_and_stay"
sleep 5
check "a claim that asks for it stays unallocated (dra-t Pending)" \
  test "$(k get pod dra-t -o 'jsonpath={.status.phase}')" = Pending
SIMGPU_STATE=$nd/run/simgpu "$build/bin/simgpu" restore 1 >/dev/null
check "the taint goes once it is restored ($(slice_devices))" wait_slice "gpu-0:$mem gpu-1:$mem" 120
check "and the claim gets it: dra-t runs" wait_logs dra-t workload.exit=0 180
k delete pod dra-t --wait=true >/dev/null

echo "-- a HAMi pod spec through the webhook's DRA mode"
# The dev cluster's scheduler runs the webhook's DRA mode opt-in: the pod's label asks for it. Its
# GPU selection (a 3090, not gpu-1) becomes CEL selectors that the real kube-scheduler evaluates;
# its binpack policy is dropped with a warning.
gpu1_uuid=$(k get resourceslices -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    if s["spec"]["driver"] == sys.argv[1] and s["spec"].get("nodeName") == sys.argv[2]:
        for d in s["spec"]["devices"]:
            if d["name"] == "gpu-1":
                print(d["attributes"]["uuid"]["string"])' "$driver" "$node")
example_pod vgpu-pod.yaml dra-hami | python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["labels"] = {"tessera.io/webhook": "dra"}
pod["metadata"].setdefault("annotations", {}).update({
    "nvidia.com/use-gputype": "3090", "nvidia.com/nouse-gpuuuid": sys.argv[2],
    "hami.io/gpu-scheduler-policy": "binpack"})
pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": sys.argv[1]}
print(json.dumps(pod))' "$node" "$gpu1_uuid" | k create -f - >/dev/null 2>"$cluster_dir/dra-hami.err"
check "the webhook gave it a claim" test -n "$(k get pod dra-hami -o 'jsonpath={.spec.resourceClaims[0].resourceClaimTemplateName}')"
check "and warned that the binpack policy is ignored under DRA" grep -q "ignored under DRA" "$cluster_dir/dra-hami.err"
# Its claim goes with the pod once it completes: its device is read while it runs.
hami_device= deadline=$((SECONDS + 120))
while [[ -z $hami_device ]] && ((SECONDS < deadline)); do
  hami_device=$(pod_device dra-hami 2>/dev/null) || true
  [[ -n $hami_device ]] || sleep 0.5
done
check "its claim's selectors kept it off gpu-1 ($gpu1_uuid): got ${hami_device:-nothing}" test "$hami_device" = gpu-0
check_completes dra-hami 180
check_limits dra-hami 4096 30
k delete pod dra-hami --wait=true >/dev/null

echo "-- a vcuda pod with a core limit: elastic compute through the claim's GpuConfig"
# vcuda-core 30 with tencent.com/vcuda-core-limit 60: alone on its GPU it may use up to 60%, where
# a hard 30% claim would get 30.
example_pod vcuda-pod.yaml dra-vcuda | python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["labels"] = {"tessera.io/webhook": "dra"}
pod["metadata"]["annotations"] = {"tencent.com/vcuda-core-limit": "60"}
for part in ("limits", "requests"):
    pod["spec"]["containers"][0]["resources"][part]["tencent.com/vcuda-core"] = 30
pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": sys.argv[1]}
print(json.dumps(pod))' "$node" | k create -f - >/dev/null
check "the webhook gave it an elastic claim ($(k get pod dra-vcuda -o 'jsonpath={.spec.resourceClaims[0].resourceClaimTemplateName}'))" \
  test "$(k get pod dra-vcuda -o 'jsonpath={.spec.resourceClaims[0].resourceClaimTemplateName}')" = tessera-gpu-1x4096mi-30c-upto60
check_completes dra-vcuda 180
check_limits dra-vcuda 4096
got=$(value compute.percent "$(k logs dra-vcuda 2>&1 || true)")
check "dra-vcuda, alone, used up to its 60% ceiling (got ${got:-nothing}%)" \
  python3 -c "import sys; sys.exit(0 if 50 <= float('${got:-0}') <= 65 else 1)"
k delete pod dra-vcuda --wait=true >/dev/null
finish
