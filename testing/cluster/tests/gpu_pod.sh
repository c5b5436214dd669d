#!/usr/bin/env bash
# A pod of one request dialect (a file of examples/) on the real cluster: the admission webhook
# gives it to the `tessera` kube-scheduler, which places it through the extender (filter,
# prioritize, bind); kubelet admits it through Tessera's device plugin (Allocate,
# PreStartContainer) and containerd starts it with the CDI device and mounts the plugin gave. Its
# container runs tessera-demo-workload under libtessera-cuda.so over the node's simgpu, and the
# test checks what it saw against the pod's request (check_dialect_pod in lib.sh).
#
#   gpu_pod.sh CLUSTER_DIR EXAMPLE MEMORY_MIB PERCENT|- MODEL
source "$(dirname "$0")/lib.sh"
check_dialect_pod "$2" "$3" "$4" "$5"
finish
