#!/usr/bin/env bash
# Tessera installed from deploy/ with `kubectl apply -k`, step by step as docs/install.md says, on
# a dev cluster started without it (--tessera none), through testing/deploy/overlays/dev-cluster
# (the images built here, simgpu's driver root) and this cluster's kubelet cgroup root. Every
# part comes up Ready, the webhooks answer the API server over TLS at their Service's cluster IP,
# the in-cluster kube-scheduler places a pod of each dialect through the extender and each runs
# with its limits, no part is refused a call and what none makes is refused. Then `kubectl delete
# -k` and the documented steps leave no object, node label or annotation, and no file outside
# the documented state folders. Prints the time from apply to the first GPU pod running.
#
#   install_kustomize.sh CLUSTER_DIR
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/install_lib.sh"

# The dev cluster's overlay, and what differs per cluster (kustomize takes relative paths only).
overlay=$work/overlay
mkdir -p "$overlay"
cat >"$overlay/kustomization.yaml" <<EOT
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
    "$repo/testing/deploy/overlays/dev-cluster" "$overlay")
patches:
  - target: {kind: DaemonSet, name: tessera-node}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --node.kubelet-cgroup-root=$kubelet_cgroup_root
EOT

snapshot_nodes "$work/before"
check "the API server calls webhooks at their Service's cluster IP (no aggregator routing)" \
  bash -c "! tr '\\0' '\\n' <'/proc/$(cat "$cluster_dir/pids/kube-apiserver")/cmdline' | grep -q aggregator-routing"

# docs/install.md, Steps.
start=$(now)
k apply -f "$repo/deploy/namespace.yaml" >/dev/null
create_annotation_key
key=$(k -n "$ns" get secret tessera-annotation-key -o 'jsonpath={.data.key}')
check "kubectl apply -k deploy/ (the dev cluster's overlay)" bash -c "'$kubectl' apply -k '$overlay' >'$work/apply.log' 2>&1"
label_nodes
if first=$(first_gpu_pod_running "$start"); then
  ok "the first GPU pod ran ${first} s after kubectl apply"
else
  fail "no GPU pod ran after kubectl apply"
fi
check_installed tessera-certgen
echo "  installed and ready $(elapsed "$start") s after kubectl apply"
check "certgen kept the annotation key the installer made" \
  test "$(k -n "$ns" get secret tessera-annotation-key -o 'jsonpath={.data.key}')" = "$key"
check "the namespace has the Pod Security level the agent needs" test \
  "$(k get namespace "$ns" -o 'jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}')" = privileged
check_dialect_pods
check_failover
check_rbac

# docs/install.md, Uninstall.
k delete -k "$overlay" --wait=true >/dev/null 2>&1
forget_nodes
check_uninstalled
check_nodes_clean "$work/before"
finish
