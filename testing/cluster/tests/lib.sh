# Shared by the tests that run on the dev cluster (testing/cluster/CMakeLists.txt). Sourced.
# Each test gets the cluster's folder as $1.
set -euo pipefail

cluster_dir=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
export KUBECONFIG=$cluster_dir/kubeconfig/admin.kubeconfig
# The harness's variables, not Tessera's: the tessera a test runs refuses TESSERA_* it does not know.
unset TESSERA_CLUSTER_DIR TESSERA_CLUSTER_CACHE
kubectl=$(sed -n 's/^declare -- bin="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")/kubectl
[[ -x $kubectl ]] || { echo "no cluster in $cluster_dir (did the dev_cluster fixture start?)"; exit 1; }
failures=0

k() { "$kubectl" "$@"; }
ok() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
  ((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
  echo "all checks passed"
}

# wait_phase POD SECONDS PHASE...: waits until the pod is in one of the phases; prints the phase.
wait_phase() {
  local pod=$1 seconds=$2 phase
  shift 2
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    phase=$(k get pod "$pod" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
    for want in "$@"; do [[ $phase == "$want" ]] && { echo "$phase"; return 0; }; done
    sleep 0.5
  done
  echo "${phase:-none}"
  return 1
}

# describe_pod POD: what to read when a pod check fails.
describe_pod() {
  k describe pod "$1" | tail -n 30 || true
}

# check_nvml_total POD CONTAINER MIB: the container's program saw MIB as its GPU's total memory.
check_nvml_total() {
  local total
  total=$(value nvml.total_mib "$(k logs "$1" -c "$2" 2>&1)")
  check "container $2 sees its own $3 MiB (NVML: ${total:-nothing})" test "$total" = "$3"
}

# check_completes POD SECONDS: waits for the pod to end, checks that it Succeeded (and shows what
# to read when it did not).
check_completes() {
  local phase
  phase=$(wait_phase "$1" "$2" Succeeded Failed) || true
  check "the pod ran to completion (phase $phase)" test "$phase" = Succeeded
  [[ $phase == Succeeded ]] || describe_pod "$1"
}

# A pod of examples/ as the cluster can run it: the same GPU requests and annotations; the image is
# the cluster's workload image and the command its GPU program; cpu and memory requests are left
# out (the examples ask for 4 CPUs and 32 GiB, more than this machine has).
example_pod() {
  local example=$1 name=$2
  k create --dry-run=client -o json -f "$repo/examples/$example" | python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["name"] = sys.argv[1]
pod["spec"]["restartPolicy"] = "Never"
for c in pod["spec"]["containers"]:
    c["image"] = "tessera.local/workload:dev"
    c["command"] = ["/usr/bin/tessera-demo-workload"]
    c.pop("args", None)
    for part in ("limits", "requests"):
        for r in ("cpu", "memory"):
            c.get("resources", {}).get(part, {}).pop(r, None)
print(json.dumps(pod))' "$name"
}

# sign ANNOTATION UID VALUE: the signature Tessera's parts put beside ANNOTATION on the object of
# UID, made with the cluster's annotation key, as docs/annotations.md gives it: v1.<key id>.<the
# HMAC-SHA256 of "ANNOTATION\nUID\nVALUE" in base64url>. For objects a test writes as an admin.
sign() {
  python3 - "$1" "$2" "$3" "$cluster_dir/annotation-key" <<'PY'
import base64, hashlib, hmac, sys
name, uid, value, key_file = sys.argv[1:]
keys = [l for l in open(key_file).read().split("\n") if l.strip() and not l.startswith("#")]
key = base64.b64decode(keys[0])
mac = hmac.new(key, f"{name}\n{uid}\n{value}".encode(), hashlib.sha256).digest()
print("v1." + hashlib.sha256(key).hexdigest()[:8] + "." + base64.urlsafe_b64encode(mac).decode().rstrip("="))
PY
}

# no_gpu_overcommitted SELECTOR: of the pods of SELECTOR (default namespace), each placed one's
# decision names GPUs of its own node, and per GPU the memory, cores and vGPU slots of those pods
# fit what the node's inventory says.
no_gpu_overcommitted() {
  { k get nodes -o json; k get pods -l "$1" -o json; } | python3 -c '
import json, sys
text, objs = sys.stdin.read(), []
decoder, i = json.JSONDecoder(), 0
while i < len(text):
    doc, i = decoder.raw_decode(text, i)
    objs += doc["items"]
    while i < len(text) and text[i].isspace():
        i += 1
gpus = {}
for o in objs:
    if o["kind"] == "Node" and "tessera.io/gpus" in o["metadata"].get("annotations", {}):
        for g in json.loads(o["metadata"]["annotations"]["tessera.io/gpus"])["gpus"]:
            gpus[g["uuid"]] = dict(node=o["metadata"]["name"], mib=g["memoryMiB"], slots=g["slots"])
used, bad = {}, []
for p in objs:
    if p["kind"] != "Pod" or not p["spec"].get("nodeName"):
        continue
    a = json.loads(p["metadata"]["annotations"]["tessera.io/allocation"])
    for c in a["containers"]:
        for d in c["devices"]:
            g = gpus.get(d["uuid"])
            if not g or g["node"] != p["spec"]["nodeName"]:
                bad.append(p["metadata"]["name"] + " holds " + d["uuid"] + " of another node")
                continue
            u = used.setdefault(d["uuid"], [0, 0, 0])
            u[0] += d["memoryMiB"]; u[1] += d["cores"]; u[2] += 1 if c.get("slot") else 0
for uuid, (mib, cores, slots) in used.items():
    g = gpus[uuid]
    if mib > g["mib"] or cores > 100 or slots > g["slots"]:
        total, count = g["mib"], g["slots"]
        bad.append(f"{uuid}: {mib} MiB of {total}, {cores}% cores, {slots} of {count} slots")
print("\n".join(bad))
sys.exit(1 if bad else 0)'
}

# value KEY TEXT: the value of a key=value line.
value() { sed -n "s/^$1=//p" <<<"$2" | head -n1; }

# workload_pod NAME SPEC_JSON [init:|sidecar:]CONTAINER LIMITS_JSON COMMAND...: a pod of the
# cluster's workload image, as JSON for `k create -f -`. SPEC_JSON is merged into the pod's spec
# (nodeSelector, restartPolicy, ...); then one triple per container: its name (init: a plain init
# container, sidecar: a restartable one), its resource limits and its shell command.
workload_pod() {
  python3 - "$@" <<'PY'
import json, sys
name, spec, rest = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
       "spec": {"terminationGracePeriodSeconds": 1, "containers": []}}
pod["spec"].update(spec)
for i in range(0, len(rest), 3):
    kind, _, cname = rest[i].rpartition(":")
    c = {"name": cname, "image": "tessera.local/workload:dev", "command": ["sh", "-c", rest[i + 2]],
         "resources": {"limits": json.loads(rest[i + 1])}}
    if kind == "sidecar":
        c["restartPolicy"] = "Always"
    pod["spec"].setdefault("initContainers" if kind else "containers", []).append(c)
print(json.dumps(pod))
PY
}

# check_dialect_pod EXAMPLE MEMORY_MIB PERCENT|- MODEL: a pod of EXAMPLE (a file of examples/) goes
# through the admission webhook to the `tessera` kube-scheduler, which places it through the
# extender; kubelet admits it through Tessera's device plugin, and its container's GPU program
# sees MEMORY_MIB as its GPU's memory, stops allocating there and gets at most PERCENT (plus 5
# points; at least half of it, as the demo checks: on a loaded 2-core machine the program's own
# launches can fall behind, but the limit must never be exceeded; - when it has no limit) of the
# compute, on a node of MODEL GPUs. The pod is deleted afterwards.
check_dialect_pod() {
  local example=$1 memory_mib=$2 percent=$3 model=$4 pod out
  pod=test-$(basename "$example" .yaml)
  k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
  if ! out=$(example_pod "$example" "$pod" | k create -f - 2>&1); then
    fail "kubectl create of $example's pod: $out"
    return
  fi
  check "the webhook gave the pod to the tessera scheduler" \
    test "$(k get pod "$pod" -o 'jsonpath={.spec.schedulerName}')" = tessera
  check_completes "$pod" 180

  local node scheduler allocation node_model logs got
  node=$(k get pod "$pod" -o 'jsonpath={.spec.nodeName}')
  scheduler=$(k get events --field-selector "involvedObject.name=$pod,reason=Scheduled" \
    -o 'jsonpath={.items[0].reportingComponent}')
  check "kube-scheduler's tessera profile placed it (event from '$scheduler')" test "$scheduler" = tessera
  allocation=$(k get pod "$pod" -o 'jsonpath={.metadata.annotations.tessera\.io/allocation}')
  check "the extender recorded its decision (tessera.io/allocation)" test -n "$allocation"
  echo "  decision on $node: $allocation"
  node_model=$(k get node "$node" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}' | grep -o '"model":"[^"]*"' | head -n1)
  check "it runs on a node with $model GPUs ($node: $node_model)" grep -q "\"$model\"" <<<"$node_model"

  logs=$(k logs "$pod" 2>&1 || true)
  echo "$logs" | sed 's/^/  | /'
  check "NVML in the container reports $memory_mib MiB as the GPU's memory" \
    test "$(value nvml.total_mib "$logs")" = "$memory_mib"
  check "allocations stopped at the $memory_mib MiB limit" \
    test "$(value oom.allocated_mib "$logs")" = "$memory_mib"
  check "the next allocation got CUDA_ERROR_OUT_OF_MEMORY (2)" test "$(value oom.error "$logs")" = 2
  check "NVML in the pod (no host PID namespace) lists its process under its own PID, as nvidia-smi would" \
    test "$(value nvml.own_process_listed "$logs")" = 1
  got=$(value compute.percent "$logs")
  if [[ $percent != - ]]; then
    check "held to its $percent% compute share (got ${got:-nothing}%)" \
      python3 -c "import sys; g = float('${got:-0}'); sys.exit(0 if $percent / 2 <= g <= $percent + 5 else 1)"
  fi
  k delete pod "$pod" --wait=true >/dev/null
}
