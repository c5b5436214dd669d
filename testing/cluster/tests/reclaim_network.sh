#!/usr/bin/env bash
# `up` on a --net that a dead cluster left its network on (every process of it killed, as when the
# session that ran it ends): the network is swept; a live cluster's network, or a bridge that is not
# a dev cluster's, is refused. Runs the harness's own functions on a network of its own (--net 248),
# without starting a cluster. As root.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for f in common network node teardown; do
  # shellcheck source=/dev/null
  source "$here/lib/$f.sh"
done
net=248
tmp=$(mktemp -d /tmp/reclaim-network.XXXXXX)
dir=$tmp/dead-cluster
mkdir -p "$dir"
nodes=(node-x node-y)
paths
failures=0
ok() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
sleeper=
cleanup() {
  [[ -n $sleeper ]] && kill -KILL "$sleeper" 2>/dev/null
  sweep_net >/dev/null 2>&1
  ip link del "$bridge" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# reclaim OUT: reclaim_network in a subshell (it exits when it refuses); its status and words.
reclaim() {
  (reclaim_network) >"$tmp/$1" 2>&1
}

ip link show "$bridge" >/dev/null 2>&1 && { echo "FAIL: $bridge exists before the test (another run on --net $net?)"; exit 1; }
make_network 2>/dev/null
[[ $(bridge_owner) == "$dir" ]] && ok "the bridge names its cluster's folder ($dir)" || fail "bridge_owner gave '$(bridge_owner)', expected $dir"

# 1. A node namespace with a process in it: the cluster is alive.
# (Each sleeper's output goes to /dev/null: one left holding the test's stdout would hold CTest.)
ip netns exec "$(node_netns node-x)" sleep 600 >/dev/null 2>&1 &
sleeper=$!
sleep 0.3
if reclaim live-node; then fail "a network with a process in a node's namespace was swept"
elif grep -q "uses --net $net and runs" "$tmp/live-node"; then ok "a process in a node's namespace: refused ($(cat "$tmp/live-node"))"
else fail "refused, but said: $(cat "$tmp/live-node")"; fi
kill -KILL "$sleeper"; wait "$sleeper" 2>/dev/null; sleeper=

# 2. A process that names the folder (the control plane's programs do): alive.
python3 -c 'import time; time.sleep(600)' "$dir/etcd" >/dev/null 2>&1 &
sleeper=$!
sleep 0.3
if reclaim live-folder; then fail "a network whose folder a process names was swept"
elif grep -q "uses --net $net and runs" "$tmp/live-folder"; then ok "a process naming the folder: refused"
else fail "refused, but said: $(cat "$tmp/live-folder")"; fi
kill -KILL "$sleeper"; wait "$sleeper" 2>/dev/null; sleeper=

# 3. Nothing of it runs, its folder is gone: swept, and nothing is left.
rm -rf "$dir"
if reclaim dead; then ok "a dead cluster's network is swept: $(grep -o 'a dead cluster.*' "$tmp/dead")"
else fail "a dead cluster's network was refused: $(cat "$tmp/dead")"; fi
left=$(leftovers)
[[ -z $left ]] && ok "nothing of it is left" || fail "left behind: $left"

# 4. A bridge on the --net that a dev cluster did not make (no alias): refused, untouched.
ip link add "$bridge" type bridge
if reclaim foreign; then fail "another program's bridge was swept"
elif grep -q "is not a dev cluster's" "$tmp/foreign" && ip link show "$bridge" >/dev/null 2>&1; then ok "another program's bridge: refused and left alone"
else fail "refused, but said: $(cat "$tmp/foreign")"; fi
ip link del "$bridge"

((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
