#!/usr/bin/env bash
# `tessera demo` on its ways out other than success, each followed by the check that nothing of
# its cluster is left (docs/demo.md, "Processes"):
#   1. a step that does not happen as told: the library in the build is swapped for one that
#      limits nothing, so the containers see whole cards; the demo must say FAILED, take its
#      cluster down and exit 1;
#   2. Ctrl-C (SIGINT) while containers run: the demo takes its cluster down and exits 130;
#   3. SIGKILL of the demo while containers run: the cluster's processes are detached and outlive
#      it; `tessera-dev-cluster down --dir <the demo's cluster folder>`, as a user would run it,
#      must take everything down.
# "Nothing left": no process that names the demo's folder or carries the case's environment mark
# (the cluster's host processes inherit the demo's environment), no mount under the folder, no
# tsr251* network device, network namespace or cgroup (v1 hierarchies).
# Usage: demo_failure_paths_test.sh BUILD_DIR   (as root, like the demo)
set -u
build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
harness=$source_dir/testing/cluster/tessera-dev-cluster
net=251
fail=0
demo_pid=
tmp=$(mktemp -d /tmp/demo-paths.XXXXXX)
tree=$(mktemp -d "$build/demo-paths-tree.XXXXXX") # beside the build: hard links work there

# The work folder a case's demo named on its first line.
work_dir() { # work_dir CASE
  sed -n 's/^The demo works in \(\/tmp\/tessera-demo\.[A-Za-z0-9]*\) .*/\1/p' "$tmp/$1.out" 2>/dev/null | head -n1
}
# Whatever happened: no demo, no cluster and no work folder of this test stays.
cleanup() {
  if [[ -n $demo_pid ]] && kill -0 "$demo_pid" 2>/dev/null; then
    kill -KILL "$demo_pid" 2>/dev/null
    wait "$demo_pid" 2>/dev/null
  fi
  local out dir
  for out in "$tmp"/*.out; do
    [[ -e $out ]] || continue
    dir=$(work_dir "$(basename "$out" .out)")
    [[ -n $dir && -d $dir ]] || continue
    # An `up` dies with its demo (death signal); should one still run, `down` must not race it.
    local e pid
    for e in /proc/[0-9]*/cmdline; do
      if tr '\0' ' ' 2>/dev/null <"$e" | grep -qF "tessera-dev-cluster up --dir $dir/cluster "; then
        pid=${e#/proc/}
        kill -KILL "${pid%/cmdline}" 2>/dev/null
      fi
    done
    if [[ -f $dir/cluster/cluster.env ]]; then
      "$harness" down --dir "$dir/cluster" --net "$net" >"$tmp/cleanup-down.log" 2>&1 ||
        { echo "cleanup: down of $dir/cluster failed:"; cat "$tmp/cleanup-down.log"; }
    fi
    rm -rf "$dir"
  done
  rm -rf "$tmp" "$tree"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# What is left of a case: its processes (by the folder or the mark) and the cluster's kernel
# objects.
left_over() { # left_over MARK DIR
  local e pid
  for e in /proc/[0-9]*/environ; do
    pid=${e#/proc/}
    pid=${pid%/environ}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    if tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "DEMO_PATHS_TEST=$1" ||
      { [[ -n $2 ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$2/"; }; then
      echo "  process $pid $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")"
    fi
  done
  [[ -n $2 ]] && findmnt -rn -o TARGET | grep -F "$2/" | sed 's/^/  mount /'
  ip -o link show | grep -o "tsr$net[^:@ ]*" | sed 's/^/  network device /'
  ip netns list | grep -o "^tsr$net[^ ]*" | sed 's/^/  network namespace /'
  # The cgroup v1 hierarchies, which the cluster's nodes use (on a hybrid machine kubelet also
  # leaves empty folders in the v2 one, /sys/fs/cgroup/unified, which `down` does not remove).
  ls -d /sys/fs/cgroup/*/tsr$net-* 2>/dev/null | grep -v '^/sys/fs/cgroup/unified/' | sed 's/^/  cgroup /'
  return 0
}
expect_nothing_left() { # expect_nothing_left CASE: waits up to 10 s
  local dir
  dir=$(work_dir "$1")
  for _ in $(seq 100); do
    [[ -z $(left_over "$1" "$dir") ]] && { echo "ok   $1: nothing left"; return; }
    sleep 0.1
  done
  echo "FAIL $1: left behind:"
  left_over "$1" "$dir"
  fail=1
}
expect_rc() { # expect_rc CASE WANT GOT
  if [[ $3 -ne $2 ]]; then
    echo "FAIL $1: exit $3, expected $2; the demo printed:"
    cat "$tmp/$1.out"
    fail=1
  else
    echo "ok   $1: exit $2 (after $((SECONDS - case_start)) s)"
  fi
}
expect_lines() { # expect_lines CASE LINE...
  local case=$1 line
  shift
  for line in "$@"; do
    grep -qF -- "$line" "$tmp/$case.out" && continue
    echo "FAIL $case: no line [$line] in:"
    cat "$tmp/$case.out"
    fail=1
    return
  done
  echo "ok   $case: the demo said what happened"
}
# Starts the demo in the background (marked CASE, output to $tmp/CASE.out) and waits until the
# first container runs, so that every kind of process is up.
start_demo() { # start_demo CASE
  case_start=$SECONDS
  DEMO_PATHS_TEST=$1 "$build/bin/tessera" demo >"$tmp/$1.out" 2>&1 &
  demo_pid=$!
  for _ in $(seq 1800); do
    grep -q "containerd runs its container" "$tmp/$1.out" && return 0
    kill -0 "$demo_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL $1: the demo did not reach its first container; it printed:"
  cat "$tmp/$1.out"
  fail=1
  return 1
}

if ip link show "tsr${net}br" >/dev/null 2>&1; then
  echo "FAIL: a cluster on --net $net is up already (ip link show tsr${net}br); the demo needs it"
  exit 1
fi

# 1. A build whose libtessera-cuda.so limits nothing: the same programs (tessera hard-linked, so
# that it finds this tree as its build) with the C library's libm in place of the hook; the tree
# holds what the cluster's script checks before it starts (its preflight).
mkdir -p "$tree/bin" "$tree/lib"
ln "$build/bin/tessera" "$tree/bin/tessera" 2>/dev/null || cp "$build/bin/tessera" "$tree/bin/"
ln -s "$build/bin/kubectl-tessera" "$tree/bin/kubectl-tessera"
for b in simgpu tessera-pause tessera-demo-workload tessera-hostile-workload; do
  ln -s "$build/bin/$b" "$tree/bin/$b"
done
ln -s "$build/lib/simgpu" "$tree/lib/simgpu"
libm=$(ldd "$build/bin/tessera" | awk '$1 == "libm.so.6" { print $3 }')
ln -s "$libm" "$tree/lib/libtessera-cuda.so"
case_start=$SECONDS
DEMO_PATHS_TEST=unlimited "$tree/bin/tessera" demo >"$tmp/unlimited.out" 2>&1
expect_rc unlimited 1 $?
expect_lines unlimited "--build $tree" \
  "FAILED: NVML (what nvidia-smi shows) reports 4096 MiB" \
  "FAILED: allocations stopped with CUDA_ERROR_OUT_OF_MEMORY at the 4096 MiB limit" \
  "FAILED: the program was held to its 30% compute share" \
  "ok: the cluster is down, and \`down\` found nothing left behind" \
  "ok: no process that names the demo's folder is running" "The demo FAILED"
logs=$(sed -n 's/^The demo FAILED: .* Logs: //p' "$tmp/unlimited.out")
[[ -n $logs && -d $logs ]] || { echo "FAIL unlimited: the logs [$logs] were not kept"; fail=1; }
expect_nothing_left unlimited

# 2. Ctrl-C.
if start_demo sigint; then
  kill -INT "$demo_pid"
  wait "$demo_pid" 2>/dev/null
  expect_rc sigint 130 $?
  expect_lines sigint "Stopped by SIGINT: taking the cluster down" \
    "ok: the cluster is down, and \`down\` found nothing left behind"
fi
demo_pid=
expect_nothing_left sigint

# 3. SIGKILL of the demo: its cluster stays up until someone takes it down.
if start_demo sigkill; then
  kill -KILL "$demo_pid"
  wait "$demo_pid" 2>/dev/null
  expect_rc sigkill 137 $?
  dir=$(work_dir sigkill)
  if ip link show "tsr${net}br" >/dev/null 2>&1; then
    echo "ok   sigkill: the cluster outlives the demo (its processes are detached)"
  else
    echo "FAIL sigkill: the cluster went with the demo: docs/demo.md says it stays"
    fail=1
  fi
  expect_lines sigkill "take its cluster down with: $harness down --dir $dir/cluster"
  if "$harness" down --dir "$dir/cluster" >"$tmp/sigkill-down.log" 2>&1; then
    echo "ok   sigkill: tessera-dev-cluster down --dir $dir/cluster took it down"
  else
    echo "FAIL sigkill: tessera-dev-cluster down --dir $dir/cluster failed:"
    cat "$tmp/sigkill-down.log"
    fail=1
  fi
fi
demo_pid=
expect_nothing_left sigkill
exit $fail
