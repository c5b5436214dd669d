#!/usr/bin/env bash
# `tessera scheduler` as a process: connects to the fake API server through a kubeconfig, says
# where it listens and what it is connected to, becomes ready after the watches sync, sees a GPU
# node appear, answers filter, and exits 0 on SIGTERM; without any API server it exits 1, with an
# annotation key file that is not one it exits 2.
#   scheduler_command_test.sh BIN_DIR
set -u
bin=$1
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL $*"; for f in "$dir"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }
# wait_for SECONDS COMMAND...: retries COMMAND every 0.1 s.
wait_for() {
  local tries=$(($1 * 10)); shift
  for ((i = 0; i < tries; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

out=$(env -i HOME="$dir" PATH="$PATH" "$bin/tessera" scheduler 2>&1); rc=$?
[[ $rc -eq 1 ]] || fail "no API server: exit $rc, want 1"
[[ $out == *"cannot connect to a Kubernetes API server"* ]] || fail "no API server: $out"
echo "ok   no API server -> exit 1 with a message"

printf '# the first key signs\nbm90IGEga2V5\n' >"$dir/annotation-key"
out=$("$bin/tessera" scheduler --scheduler.annotation-key-file="$dir/annotation-key" 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "short annotation key: exit $rc, want 2"
[[ $out == *"annotation key file $dir/annotation-key line 2: the key is 9 bytes, shorter than 32"* ]] ||
  fail "short annotation key: $out"
echo "ok   a key file with a short key -> exit 2 naming the file and the line"

"$bin/tessera-fake-apiserver" --listen 127.0.0.1:0 >"$dir/api.log" 2>&1 &
pids+=($!)
wait_for 20 grep -q "listening on" "$dir/api.log" || fail "fake API server did not start"
api=$(sed -n 's/^listening on //p' "$dir/api.log" | head -1)
cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
current-context: fake
clusters: [{name: fake, cluster: {server: "$api"}}]
contexts: [{name: fake, context: {cluster: fake, user: u}}]
users: [{name: u, user: {}}]
KUBECONFIG

# /inspect without a token (the fake API server's program has no tokens to review).
"$bin/tessera" scheduler --kubeconfig "$dir/kubeconfig" --listen 127.0.0.1:0 \
  --scheduler.read-access=open >"$dir/sched.log" 2>&1 &
sched=$!
pids+=($sched)
wait_for 20 grep -q "tessera scheduler serving" "$dir/sched.log" || fail "scheduler did not start"
grep -q "api-server=$api" "$dir/sched.log" || fail "start line does not name the API server"
grep -q "annotations are trusted unsigned" "$dir/sched.log" || fail "no warning about unsigned annotations"
port=$(sed -n 's/.*tessera scheduler serving.* port=\([0-9]*\).*/\1/p' "$dir/sched.log" | head -1)
url="http://127.0.0.1:$port"
wait_for 20 curl -sf "$url/readyz" || fail "/readyz never answered 200"
echo "ok   serving on port $port, connected to $api, ready"

inventory='{\"version\":1,\"gpus\":[{\"uuid\":\"GPU-1\",\"index\":0,\"model\":\"SimGPU-3090\",\"memoryMiB\":24268}]}'
curl -sf -X POST -H 'Content-Type: application/json' "$api/api/v1/nodes" \
  -d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"annotations\":{\"tessera.io/gpus\":\"$inventory\"}}}" \
  >/dev/null || fail "cannot create the node"
wait_for 20 bash -c "curl -sf '$url/inspect' | grep -q GPU-1" || fail "the node never reached /inspect"
filter='{"Pod":{"metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","resources":{"limits":{"tencent.com/vcuda-memory":"95"}}}]}},"NodeNames":["gpu-1"],"Nodes":null}'
answer=$(curl -sf -X POST "$url/filter" -d "$filter") || fail "filter failed"
[[ $answer == *"need 24320 MiB on 1 GPU, largest free 24268 MiB (GPU 0, SimGPU-3090)"* ]] ||
  fail "filter answer: $answer"
echo "ok   node watched, filter answers with the reason"

kill -TERM "$sched"
wait_for 20 bash -c "! kill -0 $sched" || fail "scheduler did not stop on SIGTERM"
wait "$sched"; rc=$?
[[ $rc -eq 0 ]] || fail "exit $rc after SIGTERM, want 0"
grep -q "stopping signal=SIGTERM" "$dir/sched.log" || fail "no stop line"
echo "ok   SIGTERM -> exit 0"
