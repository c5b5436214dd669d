# `helm upgrade` to a new Tessera image while GPU pods run. Sourced by install_helm.sh, with
# Tessera installed by Helm.
# - The new image is the tessera image built again under another tag (its library carries the
#   image's name in .tessera.image, so the two library files differ), imported into every node.
# - The node agent's DaemonSet rolls while a pod on each node runs a process that started before
#   the upgrade (tessera-hostile-workload fill-after: the library is preloaded at its start; it
#   waits, then allocates through the library until the driver refuses): the process lives on,
#   its container never restarts, the library it has mapped is the old file with the old bytes
#   (the new one was renamed over it, never written into it), and after the rollout it stops at
#   its limit. The node's library file is then the new image's, and a new pod maps that one.
# - The scheduler's Deployment rolls while GPU pods are created all along (again whenever the
#   webhooks refuse them, as they do while no scheduler serves): none is lost (each is bound, or
#   waits Pending for room and is bound once room is made) and none double-placed (no GPU is
#   charged more memory or compute than it has, each decision names the pod's node).
# Prints how long each rollout took and what the load saw.

upgrade_tag=upgrade
fill_wait=150
lib_path=usr-local/lib/tessera/libtessera-cuda.so

# node_library NODE: the sha256 of the node's installed library.
node_library() { sha256sum <"$cluster_dir/nodes/$1/$lib_path" | cut -c1-64; }
# image_of_library FILE: the image name the library carries (.tessera.image).
image_of_library() { grep -aoE 'tessera\.local/tessera:[a-z0-9.-]+' "$1" | sed -n 1p; }

# alive PID: the process still runs (and is the one the test started).
alive() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == tessera-hostil* ]]; }
# started PID: the container's shell has become the workload and the loader has mapped the library.
# Ready comes when the container starts, a moment before either, so this waits up to 10 s.
started() {
  local i
  for ((i = 0; i < 100; i++)); do
    alive "$1" && grep -q 'libtessera-cuda.so' "/proc/$1/maps" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# host_pid POD: the host PID of the pod's first container's main process (from its cgroup).
host_pid() {
  local cid
  cid=$(k get pod "$1" -o 'jsonpath={.status.containerStatuses[0].containerID}')
  find /sys/fs/cgroup/pids -path "*/${cid#containerd://}/cgroup.procs" -exec cat {} + 2>/dev/null | sed -n 1p
}
# mapped_library PID: "SHA256 (deleted)?" of the libtessera-cuda.so the process has mapped,
# read through the mapping itself (/proc/PID/map_files), so the bytes it runs.
mapped_library() {
  local line range
  line=$(grep -m1 'libtessera-cuda.so' "/proc/$1/maps") || return 1
  range=${line%% *}
  echo "$(sha256sum <"/proc/$1/map_files/$range" | cut -c1-64)${line##*libtessera-cuda.so}"
}

# The new image, in every node's containerd as a registry pull would bring it.
"$repo/testing/cluster/images/build-images" --only tessera --tessera-tag "$upgrade_tag" \
  "$tessera_build" "$components" "$work/images" >/dev/null
"$harness" import --dir "$cluster_dir" "$work/images/tessera.tar"
declare -A old_library=() running_pod=() running_limit=() running_pid=()
for node in "${nodes[@]}"; do old_library[$node]=$(node_library "$node"); done

# A process on each node that started before the upgrade and uses the library after it.
running_pod=([node-a]=upgrade-running-a [node-b]=upgrade-running-b)
running_limit=([node-a]=4096 [node-b]=5120)
workload_pod upgrade-running-a '{"restartPolicy":"Never","nodeSelector":{"kubernetes.io/hostname":"node-a"}}' \
  main '{"nvidia.com/gpu":1,"nvidia.com/gpumem":4096,"nvidia.com/gpucores":30}' \
  "exec tessera-hostile-workload fill-after $fill_wait" | k create -f - >/dev/null
workload_pod upgrade-running-b '{"restartPolicy":"Never","nodeSelector":{"kubernetes.io/hostname":"node-b"}}' \
  main '{"aliyun.com/gpu-mem":5}' "exec tessera-hostile-workload fill-after $fill_wait" | k create -f - >/dev/null
for node in "${nodes[@]}"; do
  pod=${running_pod[$node]}
  check "$pod runs on $node" k wait --for=condition=Ready "pod/$pod" --timeout=120s
  running_pid[$node]=$(host_pid "$pod")
  check "$pod's process (host PID ${running_pid[$node]}) is the workload, its library loaded" started "${running_pid[$node]}"
  check "$pod's process (host PID ${running_pid[$node]}) has the installed library mapped" \
    test "$(mapped_library "${running_pid[$node]}")" = "${old_library[$node]}"
done
running_since=$(now)

# GPU pods created all along the upgrade, one a second, on node-a, each again until the API server
# takes it: 10240 MiB and 30% each, so its two GPUs (24268 MiB) hold two each at most, one beside
# upgrade-running-a's 4096 MiB; the others wait.
load_pods=8
create_load() {
  local i
  for ((i = 1; i <= load_pods; i++)); do
    until workload_pod "upgrade-load-$i" '{"nodeSelector":{"kubernetes.io/hostname":"node-a"}}' \
      main '{"tencent.com/vcuda-core":30,"tencent.com/vcuda-memory":40}' \
      'tessera-demo-workload --nvml-only; exec sleep 3600' | k apply -f - >/dev/null 2>>"$work/refused"; do
      sleep 1
    done
    echo "upgrade-load-$i $(elapsed "$upgrade_start")" >>"$work/created"
    sleep 1
  done
}
: >"$work/refused"
: >"$work/created"
upgrade_start=$(now)
create_load &
loader=$!
"$components/helm" upgrade tessera "$chart" --namespace "$ns" --reuse-values \
  --set "image.tag=$upgrade_tag" >"$work/helm.log" 2>&1 &&
  ok "helm upgrade to tessera.local/tessera:$upgrade_tag" || fail "helm upgrade: $(cat "$work/helm.log")"
check "the node agents rolled out" k -n "$ns" rollout status daemonset/tessera-node --timeout=300s
agents_rolled=$(elapsed "$upgrade_start")
check "the scheduler rolled out" k -n "$ns" rollout status deployment/tessera-scheduler --timeout=300s
scheduler_rolled=$(elapsed "$upgrade_start")
echo "  node agents rolled out in $agents_rolled s, the scheduler in $scheduler_rolled s"
check "the upgrade's certificate Job completed (the certificates kept)" \
  k -n "$ns" wait --for=condition=complete job/tessera-certgen-2 --timeout=120s
# Each replica that is not ending runs the new image.
scheduler_images() {
  k -n "$ns" get pods -l app.kubernetes.io/name=tessera-scheduler \
    -o 'jsonpath={range .items[*]}{.metadata.deletionTimestamp} {.spec.containers[0].image}{"\n"}{end}' |
    awk 'NF == 1 { print $1 }' | sort -u
}
check "every scheduler replica runs the new image ($(scheduler_images | tr '\n' ' '))" \
  test "$(scheduler_images)" = "tessera.local/tessera:$upgrade_tag"
check "the rollouts ended before the running processes' wait did ($(elapsed "$running_since") of $fill_wait s)" \
  python3 -c "import sys; sys.exit(0 if $(elapsed "$running_since") < $fill_wait else 1)"

for node in "${nodes[@]}"; do
  pod=${running_pod[$node]} pid=${running_pid[$node]}
  new=$(node_library "$node")
  check "$node: the installed library is the new image's ($(image_of_library "$cluster_dir/nodes/$node/$lib_path"))" \
    test "$(image_of_library "$cluster_dir/nodes/$node/$lib_path")" = "tessera.local/tessera:$upgrade_tag"
  check "$node: the new library is another file than the old ($new)" test "$new" != "${old_library[$node]}"
  check "$pod: its process lives on through the rollout" alive "$pid"
  mapped=$(mapped_library "$pid" || true)
  check "$pod: it still runs the old library's bytes, a file renamed away, never written into ($mapped)" \
    test "$mapped" = "${old_library[$node]} (deleted)"
done
for node in "${nodes[@]}"; do
  pod=${running_pod[$node]}
  check "$pod: its process ended well after the rollout" bash -c \
    "[[ \$('$kubectl' get pod '$pod' -o 'jsonpath={.status.phase}') == Succeeded ]] || '$kubectl' wait --for=jsonpath='{.status.phase}'=Succeeded 'pod/$pod' --timeout=$((fill_wait + 60))s >/dev/null"
  check "$pod: its container never restarted" \
    test "$(k get pod "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')" = 0
  got=$(value fill.allocated_mib "$(k logs "$pod" 2>&1)")
  check "$pod: after the upgrade it allocated up to its ${running_limit[$node]} MiB limit, no more (${got:-nothing})" \
    test "$got" = "${running_limit[$node]}"
done

# A pod started after the upgrade maps the new library.
workload_pod upgrade-new '{"restartPolicy":"Never","nodeSelector":{"kubernetes.io/hostname":"node-b"}}' \
  main '{"aliyun.com/gpu-mem":2}' 'exec tessera-hostile-workload fill-after 10' | k create -f - >/dev/null
if check "a pod created after the upgrade runs" k wait --for=condition=Ready pod/upgrade-new --timeout=120s; then
  check "it maps the new library" test "$(mapped_library "$(host_pid upgrade-new)")" = "$(node_library node-b)"
  k wait --for=jsonpath='{.status.phase}'=Succeeded pod/upgrade-new --timeout=60s >/dev/null || true
  check "it allocated up to its 2048 MiB limit" test "$(value fill.allocated_mib "$(k logs upgrade-new 2>&1)")" = 2048
fi

wait "$loader"
echo "  load pods created at (s after helm upgrade began): $(cut -d' ' -f2 "$work/created" | tr '\n' ' ')"
echo "  the API server refused $(grep -c 'failed calling webhook' "$work/refused") creations while no scheduler served"

# placed_or_waiting: every load pod is Running with its decision, or Pending because no GPU
# has room (kube-scheduler's FailedScheduling event says so).
load_state() {
  k get pods -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    name = p["metadata"]["name"]
    if not name.startswith("upgrade-load-"):
        continue
    a = p["metadata"].get("annotations", {}).get("tessera.io/allocation", "")
    print(name, p["status"]["phase"], p["spec"].get("nodeName", "-"), "decided" if a else "undecided")'
}
settled() {
  local name phase node decided
  while read -r name phase node decided; do
    if [[ $phase == Running && $decided == decided ]]; then continue; fi
    [[ $phase == Pending && $node == - ]] || { unsettled="$name is $phase on $node"; return 1; }
    [[ -n $(k get events --field-selector "involvedObject.name=$name,reason=FailedScheduling" -o name) ]] ||
      { unsettled="$name has no FailedScheduling event"; return 1; }
  done < <(load_state)
}
deadline=$((SECONDS + 120))
until settled || ((SECONDS > deadline)); do sleep 2; done
load_state | sed 's/^/  | /'
unsettled=
check "every load pod is placed, or waits Pending for room" settled
[[ -z $unsettled ]] || echo "  $unsettled"

# No GPU is charged more than it has: the charges of all running pods with a decision.
check_not_overcommitted() {
  local report
  k get pods -A -o json >"$work/pods.json"
  k get nodes -o json >"$work/nodes.json"
  report=$(python3 - "$work/pods.json" "$work/nodes.json" <<'PY'
import json, sys
pods, nodes = (json.load(open(f))["items"] for f in sys.argv[1:3])
gpus = {}
for n in nodes:
    inv = json.loads(n["metadata"].get("annotations", {}).get("tessera.io/gpus", '{"gpus":[]}'))
    for g in inv["gpus"]:
        gpus[(n["metadata"]["name"], g["uuid"])] = {"memory": g["memoryMiB"], "used": 0, "cores": 0}
bad = []
for p in pods:
    a = p["metadata"].get("annotations", {}).get("tessera.io/allocation")
    if not a or p["status"].get("phase") in ("Succeeded", "Failed") or p["metadata"].get("deletionTimestamp"):
        continue
    d = json.loads(a)
    if d["node"] != p["spec"].get("nodeName"):
        bad.append(f"{p['metadata']['name']}: decided for {d['node']}, bound to {p['spec'].get('nodeName')}")
    for c in d["containers"]:
        for dev in c["devices"]:
            g = gpus[(d["node"], dev["uuid"])]
            g["used"] += dev["memoryMiB"]
            g["cores"] += dev.get("cores", 0)
for (node, uuid), g in sorted(gpus.items()):
    line = f"{node} {uuid}: {g['used']} of {g['memory']} MiB, {g['cores']}% compute"
    print(line)
    if g["used"] > g["memory"] or g["cores"] > 100:
        bad.append("over: " + line)
for b in bad:
    print("BAD " + b)
PY
)
  echo "$report" | sed 's/^/  | /'
  check "no GPU is charged more than it has, no decision names another node" bash -c "! grep -q '^BAD' <<<'$report'"
}
check_not_overcommitted

# Room made: the pods waiting get it.
mapfile -t placed < <(load_state | awk '$2 == "Running" {print $1}')
((${#placed[@]})) && k delete pod "${placed[@]}" --wait=false >/dev/null
deadline=$((SECONDS + 120))
until [[ -z $(load_state | awk '$2 != "Running" && $2 != "Succeeded"') ]] || ((SECONDS > deadline)); do sleep 2; done
check "with room made, every pod that waited is placed and runs" \
  test -z "$(load_state | grep -v -e ' Running .* decided$')"
check_not_overcommitted
k delete pods --all --wait=true >/dev/null
