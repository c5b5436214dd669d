#!/usr/bin/env bash
# The `tessera` binary end to end: version, config sources, errors with suggestions, the
# generated configuration reference. (The kubectl plugin: src/kubectl_plugin.)
set -u
src=$1
bin=$2
fail=0
check() {  # check NAME EXPECTED-SUBSTRING ACTUAL
  if [[ $3 != *"$2"* ]]; then
    echo "FAIL $1: expected to find [$2] in:"; echo "$3"; fail=1
  else
    echo "ok   $1"
  fi
}

out=$("$bin/tessera" version 2>&1); check version "tessera " "$out"

out=$(env TESSERA_LOG_LEVEL=debug "$bin/tessera" config 2>&1)
check env-source "$(printf 'log.level')" "$out"
line=$(grep '^log.level ' <<<"$out")
check env-value "debug" "$line"
check env-named "env TESSERA_LOG_LEVEL" "$line"

out=$(env TESSERA_LOG_LEVL=debug "$bin/tessera" config 2>&1); rc=$?
[[ $rc -ne 0 ]] || { echo "FAIL typo exits 0"; fail=1; }
check typo-suggests "did you mean TESSERA_LOG_LEVEL?" "$out"

out=$("$bin/tessera" confg 2>&1); rc=$?
[[ $rc -ne 0 ]] || { echo "FAIL unknown command exits 0"; fail=1; }
check command-suggests 'did you mean "config"?' "$out"

out=$("$bin/tessera" config --for nosuch 2>&1); rc=$?
[[ $rc -ne 0 ]] || { echo "FAIL unknown --for exits 0"; fail=1; }

# Configuration that cannot work is refused by --print-config too, naming key, source and bound.
out=$("$bin/tessera" node --print-config --node.device-memory-scaling=11 2>&1); rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL node --print-config with device-memory-scaling=11 exits $rc"; fail=1; }
check print-config-refuses-node \
  'node.device-memory-scaling "11" (flag --node.device-memory-scaling): expected a value from 1 to 10' "$out"
out=$("$bin/tessera" scheduler --print-config --scheduler.max-body=0 2>&1); rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL scheduler --print-config with max-body=0 exits $rc"; fail=1; }
check print-config-refuses-scheduler \
  'scheduler.max-body (flag --scheduler.max-body): expected a value of at least 1Ki' "$out"

# docs/config-reference.md is generated from the schema and must match it.
if ! diff <("$bin/tessera" config reference) "$src/docs/config-reference.md" >/dev/null; then
  echo "FAIL docs/config-reference.md is stale: regenerate with"
  echo "  build/bin/tessera config reference > docs/config-reference.md"
  fail=1
else
  echo "ok   config-reference"
fi

exit $fail
