#!/usr/bin/env bash
# `tessera demo` on its ways out other than success, each followed by the check that no process
# it started is left (docs/demo.md, "Processes"):
#   1. a step that does not happen as told: the library in the build is swapped for one that
#      limits nothing, so the containers see whole cards; the demo must say FAILED and exit 1;
#   2. Ctrl-C (SIGINT) while containers run: exit 130;
#   3. SIGKILL of the demo itself while containers run: its children die with it (death signal),
#      the containers' commands end with their fake kubelet.
# Usage: demo_failure_paths_test.sh BUILD_DIR
set -u
build=$1
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/demo-paths.XXXXXX")
tree=$(mktemp -d "$build/demo-paths-tree.XXXXXX")  # beside the build: hard links work there
# The demo keeps its work folder after a failure or a signal: remove the ones it names.
cleanup() {
  sed -n 's/^The demo works in \(.*\) (each .*/\1/p' "$tmp"/*.out 2>/dev/null |
    while read -r dir; do [[ $dir == /tmp/tessera-demo.* ]] && rm -rf "$dir"; done
  rm -rf "$tmp" "$tree"
}
trap cleanup EXIT

# Every process the demo starts inherits its environment, the containers' commands too (the fake
# kubelet passes its environment on): a process whose environment holds the mark of a case is one
# of that case's.
left_over() {  # left_over MARK
  local e pid
  for e in /proc/[0-9]*/environ; do
    if tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "DEMO_PATHS_TEST=$1"; then
      pid=${e#/proc/}
      pid=${pid%/environ}
      echo "  $pid $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")"
    fi
  done
}
expect_none_left() {  # expect_none_left MARK CASE: waits up to 10 s
  for _ in $(seq 100); do
    [[ -z $(left_over "$1") ]] && { echo "ok   $2: no process left"; return; }
    sleep 0.1
  done
  echo "FAIL $2: processes left behind:"
  left_over "$1"
  fail=1
}
expect_rc() {  # expect_rc CASE WANT GOT OUTPUT-FILE
  if [[ $3 -ne $2 ]]; then
    echo "FAIL $1: exit $3, expected $2; the demo printed:"
    cat "$4"
    fail=1
  else
    echo "ok   $1: exit $2"
  fi
}
# Starts the demo in the background (marked CASE, output to $tmp/CASE.out) and waits until the
# first container's program has run, so that every kind of process is up.
start_demo() {  # start_demo CASE
  DEMO_PATHS_TEST=$1 "$build/bin/tessera" demo >"$tmp/$1.out" 2>&1 &
  demo_pid=$!
  for _ in $(seq 600); do
    grep -q "the fake kubelet started the container" "$tmp/$1.out" && return 0
    kill -0 "$demo_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL $1: the demo did not reach its first container; it printed:"
  cat "$tmp/$1.out"
  fail=1
  return 1
}

# 1. A build whose libtessera-cuda.so limits nothing: the same binaries (tessera hard-linked, so
# that it finds this tree as its build) with the C library's libm in place of the hook.
mkdir -p "$tree/bin" "$tree/lib"
ln "$build/bin/tessera" "$tree/bin/tessera" 2>/dev/null || cp "$build/bin/tessera" "$tree/bin/"
ln -s tessera "$tree/bin/kubectl-tessera"
for b in tessera-fake-apiserver tessera-fake-kubelet tessera-demo-workload; do
  ln -s "$build/bin/$b" "$tree/bin/$b"
done
ln -s "$build/lib/simgpu" "$tree/lib/simgpu"
libm=$(ldd "$build/bin/tessera" | awk '$1 == "libm.so.6" { print $3 }')
ln -s "$libm" "$tree/lib/libtessera-cuda.so"
DEMO_PATHS_TEST=unlimited "$tree/bin/tessera" demo >"$tmp/unlimited.out" 2>&1
expect_rc unlimited 1 $? "$tmp/unlimited.out"
for line in "FAILED: NVML (what nvidia-smi shows) reports 4096 MiB" \
  "FAILED: allocations stopped with CUDA_ERROR_OUT_OF_MEMORY at the 4096 MiB limit" \
  "FAILED: the program was held to its 30% compute share" \
  "ok: every process the demo started has ended" "The demo FAILED"; do
  grep -qF "$line" "$tmp/unlimited.out" || {
    echo "FAIL unlimited: no line [$line] in:"
    cat "$tmp/unlimited.out"
    fail=1
  }
done
logs=$(sed -n 's/^The demo FAILED: .* Logs: //p' "$tmp/unlimited.out")
[[ -n $logs && -d $logs ]] || { echo "FAIL unlimited: the logs [$logs] were not kept"; fail=1; }
expect_none_left unlimited unlimited

# 2. Ctrl-C.
if start_demo sigint; then
  kill -INT "$demo_pid"
  wait "$demo_pid" 2>/dev/null
  expect_rc sigint 130 $? "$tmp/sigint.out"
fi
expect_none_left sigint sigint

# 3. SIGKILL of the demo.
if start_demo sigkill; then
  kill -KILL "$demo_pid"
  wait "$demo_pid" 2>/dev/null
  expect_rc sigkill 137 $? "$tmp/sigkill.out"
fi
expect_none_left sigkill sigkill
exit $fail
