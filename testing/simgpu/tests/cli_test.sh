#!/usr/bin/env bash
# The `simgpu` CLI: help, stat's JSON shape, xid/remove/restore/reset-gpu argument checks,
# mig-minors, reset.
# Usage: cli_test.sh SIMGPU_BINARY
set -uo pipefail
simgpu=$1
export SIMGPU_STATE=$(mktemp -d /tmp/simgpu-cli-XXXXXX)
export SIMGPU_DEVICES='gpu=SimGPU-A:1GiB:10;gpu=SimGPU-B:2GiB:20'
trap 'rm -rf "$SIMGPU_STATE"' EXIT
failures=0
expect() {  # expect RC DESCRIPTION COMMAND...
  local want=$1 what=$2
  shift 2
  "$@" >/dev/null 2>&1
  local rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: $what: exit $rc, want $want"
    failures=$((failures + 1))
  fi
}
expect 0 "--help" "$simgpu" --help
expect 2 "no command" "$simgpu"
expect 2 "unknown command" "$simgpu" frobnicate
expect 2 "stat with an argument" "$simgpu" stat extra
expect 2 "driver with an argument" "$simgpu" driver extra
expect 2 "xid without a code" "$simgpu" xid 0
expect 2 "xid on a device that does not exist" "$simgpu" xid 2 48
expect 2 "xid with a bad code" "$simgpu" xid 0 forty
expect 0 "xid" "$simgpu" xid 1 48
expect 2 "reset-gpu without an index" "$simgpu" reset-gpu
expect 2 "reset-gpu on a device that does not exist" "$simgpu" reset-gpu 2
expect 0 "reset-gpu of an idle GPU" "$simgpu" reset-gpu 0
expect 2 "mig-minors with an argument" "$simgpu" mig-minors 0
minors=$("$simgpu" mig-minors)
[[ $minors == "config 1"$'\n'"monitor 2"$'\n'"gpu0/gi0/access 3"$'\n'* &&
  $(wc -l <<<"$minors") -eq $((2 + 2 * 15 * 9)) ]] ||
  { echo "FAIL: mig-minors: $(head -3 <<<"$minors")"; failures=$((failures + 1)); }
expect 0 "remove" "$simgpu" remove 1

stat=$("$simgpu" stat)
for key in '"devices":[' '"index":0' '"index":1' '"uuid":"GPU-' '"memory_total":2147483648' \
  '"used_bytes":0' '"peak_used_bytes":0' '"busy_ns":0' '"busy_ns_by_pid":{}' '"removed":true' \
  '"host_slowdown":75' '"host_mapped_bytes":0' '"host_mapped_bytes_by_pid":{}'; do
  if [[ $stat != *"$key"* ]]; then
    echo "FAIL: stat lacks $key: $stat"
    failures=$((failures + 1))
  fi
done
expect 0 "restore" "$simgpu" restore 1
[[ $("$simgpu" stat) == *'"removed":true'* ]] && { echo "FAIL: restore"; failures=$((failures + 1)); }

# Another machine in the same directory is refused with a message that says what to do.
msg=$(SIMGPU_DEVICES=count=1 "$simgpu" stat 2>&1)
[[ $? -eq 1 && $msg == *"simgpu reset"* ]] || { echo "FAIL: mismatch: $msg"; failures=$((failures + 1)); }
expect 0 "reset" "$simgpu" reset
[[ -e $SIMGPU_STATE/state ]] && { echo "FAIL: reset left the state"; failures=$((failures + 1)); }
expect 0 "stat after reset, other machine" env SIMGPU_DEVICES=count=1 "$simgpu" stat

if ((failures > 0)); then
  echo "cli_test: $failures failure(s)"
  exit 1
fi
echo "cli_test: all checks passed"
