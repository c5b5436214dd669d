#!/usr/bin/env bash
# End to end on one machine: tessera-fake-apiserver, `tessera node` on simgpu's NVML and
# tessera-fake-kubelet. Checks registration and capacity, the gpus annotation, a pod with a
# decision (its program sees its memory limit through cuMemGetInfo when the in-container library
# and its probe are built), a pod without a decision (whole GPU), an impossible decision (named
# error), re-registration after a kubelet restart, removal of a finished pod's files, and each
# running container's pids file holding its PID (the fake kubelet makes its cgroup in a fake tree).
#   node_e2e_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/tnode-e2e.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }
# wait_for SECONDS COMMAND...: polls every 0.1 s.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do ((SECONDS < deadline)) || return 1; sleep 0.1; done
}

export SIMGPU_STATE=$work/simgpu SIMGPU_DEVICES="count=2,memory=16GiB,sms=108"
"$build/bin/tessera-fake-apiserver" --listen 127.0.0.1:0 >"$work/api.log" 2>&1 &
pids+=($!)
wait_for 20 grep -q "listening on" "$work/api.log" || fail "API server did not start"
url=$(head -1 "$work/api.log" | awk '{print $3}')
cat >"$work/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$url"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
KC
get() { curl -sf "$url$1"; }
jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# The container command: waits (up to 5 s) for its own PID in the pids file beside its limits file
# (no PID namespace here, so "<pid> <pid>"); with the library and its probe, checks cuMemGetInfo
# against the limit.
probe=$build/tests/hook_probe
lib=$build/lib/libtessera-cuda.so
limits='${TESSERA_LIMITS_FILE}'
command="f=\$(dirname $limits)/pids; i=0; while [ \$i -lt 50 ]; do \
if grep -qx \"\$\$ \$\$\" \$f 2>/dev/null; then echo PIDS-OK after \$i polls; break; fi; sleep 0.1; i=\$((i+1)); done; "
if [[ -x $probe && -f $lib ]]; then
  command+="cat $limits; m=\$(grep '^memory.0=' $limits | cut -d= -f2); \
if [ \"\$m\" != 0 ]; then LD_LIBRARY_PATH=$build/lib/simgpu LD_PRELOAD=$lib $probe direct info \$m \$m && echo MEMINFO-OK; fi"
else
  command+="cat $limits"
fi
"$build/bin/tessera-fake-kubelet" --dir "$work/kubelet" --node n1 --kubeconfig "$work/kubeconfig" \
  --command "$command" --log-dir "$work/logs" --cgroup-root "$work/cgroup" >"$work/kubelet.log" 2>&1 &
kubelet=$!
pids+=($kubelet)
"$build/bin/tessera" node --node-name n1 --kubelet-dir "$work/kubelet" --cdi-dir "$work/cdi" \
  --state-dir "$work/state" --kubeconfig "$work/kubeconfig" \
  --node.nvml-library "$build/lib/simgpu/libnvidia-ml.so.1" \
  --node.housekeeping-interval 1s --node.metrics-listen 127.0.0.1:0 \
  --node.cgroup-root "$work/cgroup" --node.pid-refresh 200ms >"$work/node.log" 2>&1 &
pids+=($!)

capacity() { get /api/v1/nodes/n1 | jq_py "d['status']['allocatable'].get('$1','')"; }
capacity_is() { [[ $(capacity "$1") == "$2" ]]; }
wait_for 30 capacity_is nvidia.com/gpu 20 || fail "nvidia.com/gpu capacity is not 20"
# Each resource registers on its own, so each capacity may appear a moment after the first.
wait_for 10 capacity_is tencent.com/vcuda-core 200 || fail "vcuda-core capacity"
wait_for 10 capacity_is tencent.com/vcuda-memory 128 || fail "vcuda-memory capacity"
wait_for 10 capacity_is aliyun.com/gpu-mem 32 || fail "gpu-mem capacity"
gpus_annotation() { get /api/v1/nodes/n1 | jq_py "d['metadata'].get('annotations',{})['tessera.io/gpus']"; }
wait_for 10 gpus_annotation || fail "no tessera.io/gpus annotation on the node"
gpus=$(gpus_annotation)
uuid0=$(echo "$gpus" | jq_py "d['gpus'][0]['uuid']")
[[ $uuid0 == GPU-* ]] || fail "tessera.io/gpus has no uuid: $gpus"

wait_for 10 grep -q "serving metrics" "$work/node.log" || fail "no metrics server"
metrics_port=$(grep -o 'serving metrics listen=[^ ]* port=[0-9]*' "$work/node.log" | sed 's/.*port=//')
# Read whole before grep: with pipefail, `curl | grep -q` fails when grep stops reading at its
# match while curl still writes (the page is larger than a pipe's buffer).
metrics=$(curl -sf "http://127.0.0.1:$metrics_port/metrics") || fail "no answer from /metrics"
grep -q "tessera_gpu_healthy{node=\"n1\",Hostname=\"n1\",gpu=\"0\",UUID=\"$uuid0\",[^}]*} 1$" <<<"$metrics" ||
  fail "metrics lack tessera_gpu_healthy for $uuid0"

pod() {  # pod NAME RESOURCE COUNT [DECISION-JSON]
  local ann=""
  [[ -n ${4:-} ]] && ann=",\"annotations\":{\"tessera.io/allocation\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$4")}"
  curl -sf -XPOST -H 'Content-Type: application/json' "$url/api/v1/namespaces/default/pods" -d \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"default\"$ann},
      \"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"main\",\"image\":\"x\",
      \"resources\":{\"limits\":{\"$2\":\"$3\"}}}]}}" >/dev/null
}
phase() { get "/api/v1/namespaces/default/pods/$1" | jq_py "d.get('status',{}).get('phase','')"; }
phase_is() { [[ $(phase "$1") == "$2" ]]; }

decision() {  # decision UUID MiB CORES
  echo "{\"version\":1,\"node\":\"n1\",\"containers\":[{\"name\":\"main\",\"mode\":\"hard\",\"devices\":[{\"uuid\":\"$1\",\"memoryMiB\":$2,\"cores\":$3}]}]}"
}
pod decided nvidia.com/gpu 1 "$(decision "$uuid0" 3000 25)"
wait_for 30 phase_is decided Succeeded || fail "pod decided: $(phase decided)"
log=$work/logs/default_decided_main.log
grep -q "uuid.0=$uuid0" "$log" || fail "decided: wrong GPU: $(cat "$log")"
grep -q "memory.0=3145728000" "$log" || fail "decided: wrong memory"
if [[ -x $probe && -f $lib ]]; then
  grep -q MEMINFO-OK "$log" || fail "decided: cuMemGetInfo did not report the limit: $(cat "$log")"
  echo "cuMemGetInfo reports the 3000 MiB limit inside the container"
fi
grep -q 'tessera.io/allocated' <<<"$(get /api/v1/namespaces/default/pods/decided)" ||
  fail "no tessera.io/allocated"
grep -q PIDS-OK "$log" || fail "decided: its PID never reached the pids file: $(cat "$log")"
echo "the container's pids file held its PID ($(grep -o 'PIDS-OK after [0-9]* polls' "$log") of 0.1 s)"

pod plain nvidia.com/gpu 2
wait_for 30 phase_is plain Succeeded || fail "pod plain: $(phase plain)"
grep -q "devices=2" "$work/logs/default_plain_main.log" || fail "plain: not two whole GPUs"

pod impossible nvidia.com/gpu 1 "$(decision GPU-not-here 1000 10)"
wait_for 30 phase_is impossible Failed || fail "pod impossible: $(phase impossible)"
msg=$(get /api/v1/namespaces/default/pods/impossible | jq_py "d['status'].get('message','')")
[[ $msg == *"pod default/impossible container main"*"GPU-not-here is not on this node"* ]] ||
  fail "impossible: message was: $msg"

# A kubelet restart: the plugins register again within 2 seconds.
registrations() { grep -c "registered with kubelet" "$work/node.log"; }
registered_again() { (($(registrations) >= before + 4)); }
before=$(registrations)
kill -HUP "$kubelet"
wait_for 2 registered_again || fail "no re-registration within 2 s"

# Finished pods' files go (housekeeping every second here).
id=$(get /api/v1/namespaces/default/pods/decided | jq_py "json.loads(d['metadata']['annotations']['tessera.io/allocated'])['main']['allocation']")
[[ $id =~ ^[0-9a-f]{16}$ ]] || fail "bad allocation ID: $id"
wait_for 10 test ! -e "$work/state/allocations/$id" || fail "allocation $id not removed"
wait_for 5 test ! -e "$work/cdi/tessera.io-container-$id.json" || fail "CDI spec of $id not removed"
echo "node e2e: all checks passed"
