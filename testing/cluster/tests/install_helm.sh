#!/usr/bin/env bash
# Tessera installed with real Helm from deploy/helm/tessera (testing/deploy/helm/dev-cluster-values.yaml
# and this cluster's kubelet cgroup root) on a dev cluster started without it (--tessera none),
# checked as install_kustomize.sh checks deploy/; then `helm upgrade` to a new image while GPU
# pods run (helm_upgrade.sh), which keeps the annotation key certgen made at install, and `helm
# uninstall` with the documented steps, which leave no object (but that key, until the namespace
# goes), node label or annotation, and no file outside the documented state folders.
#
#   install_helm.sh CLUSTER_DIR
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/install_lib.sh"
chart=$repo/deploy/helm/tessera

snapshot_nodes "$work/before"
start=$(now)
if ! "$components/helm" install tessera "$chart" --namespace "$ns" --create-namespace \
  --values "$repo/testing/deploy/helm/dev-cluster-values.yaml" \
  --set "node.kubeletCgroupRoot=$kubelet_cgroup_root" >"$work/helm.log" 2>&1; then
  fail "helm install: $(cat "$work/helm.log")"
  finish
fi
ok "helm install"
label_nodes
if first=$(first_gpu_pod_running "$start"); then
  ok "the first GPU pod ran ${first} s after helm install"
else
  fail "no GPU pod ran after helm install"
fi
check_installed tessera-certgen-1
echo "  installed and ready $(elapsed "$start") s after helm install"
annotation_key() { k -n "$ns" get secret tessera-annotation-key -o 'jsonpath={.data.key}' 2>/dev/null; }
key=$(annotation_key)
check "certgen made the annotation key Secret (the chart renders none)" test -n "$key"
check_dialect_pods
check_rbac

source "$(dirname "$0")/helm_upgrade.sh"
check "helm upgrade kept the annotation key" test "$(annotation_key)" = "$key"

# docs/install.md, Uninstall.
"$components/helm" uninstall tessera --namespace "$ns" --wait >"$work/helm.log" 2>&1 &&
  ok "helm uninstall" || fail "helm uninstall: $(cat "$work/helm.log")"
# The pods of what Helm deleted go after it, by the garbage collector.
deadline=$((SECONDS + 60))
while [[ -n $(k -n "$ns" get pods -o name) ]] && ((SECONDS < deadline)); do sleep 1; done
left=$(k -n "$ns" get all,secrets,configmaps,roles,rolebindings -o name 2>/dev/null |
  grep -v -e '^configmap/kube-root-ca.crt$' -e '^secret/tessera-annotation-key$' || true)
check "helm uninstall left nothing in $ns but what Kubernetes puts in every namespace and the annotation key${left:+: $left}" \
  test -z "$left"
check "helm uninstall left the annotation key (docs/install.md: it goes with the namespace)" \
  test "$(annotation_key)" = "$key"
k delete namespace "$ns" --wait=true >/dev/null
forget_nodes
check_uninstalled
check_nodes_clean "$work/before"
finish
