#!/usr/bin/env bash
# Two containers of one pod share GPU memory as frameworks do, through an emptyDir they both mount:
# a cuMemAlloc buffer by IPC handle (vLLM, torch.multiprocessing) and a cuMemCreate allocation by a
# POSIX file descriptor sent over a Unix socket (NCCL). Each runs under Tessera's library with its
# own limit, in its own PID namespace (simgpu's driver daemon knows them by host PID); the memory
# is charged once, to the container that made it, and nothing to the one that opened it.
source "$(dirname "$0")/lib.sh"
pod=test-sharing

k delete pod "$pod" --ignore-not-found --wait=true >/dev/null
workload_pod "$pod" '{"restartPolicy":"Never"}' \
  exporter '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2048}' 'tessera-demo-workload --share export /share' \
  importer '{"nvidia.com/gpu":1,"nvidia.com/gpumem":2048}' 'tessera-demo-workload --share import /share' |
  python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["spec"]["volumes"] = [{"name": "share", "emptyDir": {}}]
for c in pod["spec"]["containers"]:
    c["volumeMounts"] = [{"name": "share", "mountPath": "/share"}]
print(json.dumps(pod))' | k create -f - >/dev/null
check_completes "$pod" 180
exporter=$(k logs "$pod" -c exporter 2>&1 || true)
importer=$(k logs "$pod" -c importer 2>&1 || true)
echo "$exporter" | sed 's/^/  exporter | /'
echo "$importer" | sed 's/^/  importer | /'
check "the importer wrote through the buffer it opened by IPC handle" \
  test "$(value share.ipc "$importer")" = ok
check "the importer wrote through the VMM memory it imported by file descriptor" \
  test "$(value share.vmm "$importer")" = ok
check "the exporter's container was charged the 256 + 128 MiB it made" \
  test "$(value share.exporter_charged_mib "$exporter")" = 384
check "the importer's container was charged nothing for what it opened" \
  test "$(value share.importer_charged_mib "$importer")" = 0
check "the exporter let go of both once the importer was done" \
  test "$(value share.exporter_done "$exporter")" = 1
k delete pod "$pod" --wait=true >/dev/null
finish
