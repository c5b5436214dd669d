# Tessera on the dev cluster: deploy/'s namespace, RBAC and webhooks applied as they are (the
# webhooks' caBundle filled in as the certgen Job would), the scheduler extender and one node agent
# per node as host processes under their deploy/ service accounts and flags, and the second
# kube-scheduler with deploy/'s configuration (only its URLs changed). Sourced.

apply_deploy_objects() {
  local f
  for f in namespace.yaml scheduler/rbac.yaml scheduler/kube-scheduler-rbac.yaml node/rbac.yaml \
    webhook/webhooks.yaml; do
    kubectl_admin apply -f "$repo/deploy/$f" >>"$logs/setup.log" 2>&1 ||
      die "applying deploy/$f failed (log: $logs/setup.log)"
  done
  local ca
  ca=$(base64 -w0 "$pki/ca.crt")
  local kind count patch i
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    count=$(kubectl_admin get "$kind" tessera -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["webhooks"]))')
    patch=""
    for ((i = 0; i < count; i++)); do
      patch+="${patch:+,}{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca\"}"
    done
    kubectl_admin patch "$kind" tessera --type=json -p "[$patch]" >>"$logs/setup.log" ||
      die "filling the caBundle of $kind tessera failed (log: $logs/setup.log)"
  done
  # The scheduler runs on the host, not as the Deployment's pod: its Service has no selector and
  # one EndpointSlice that points at the host, so the API server reaches the webhook through the
  # Service (with --enable-aggregator-routing, by endpoint) under the certificate's service name.
  kubectl_admin apply -f - >>"$logs/setup.log" <<EOT
apiVersion: v1
kind: Service
metadata:
  name: tessera-scheduler
  namespace: tessera-system
spec:
  ports:
    - name: https
      port: 8443
      protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: tessera-scheduler-host
  namespace: tessera-system
  labels:
    kubernetes.io/service-name: tessera-scheduler
    endpointslice.kubernetes.io/managed-by: tessera-dev-cluster
addressType: IPv4
ports:
  - name: https
    port: 8443
    protocol: TCP
endpoints:
  - addresses: ["$host_ip"]
    conditions:
      ready: true
EOT
  local account
  for account in tessera-scheduler tessera-kube-scheduler tessera-node; do
    service_account_kubeconfig "$account"
  done
  log "ok: deploy/ namespace, RBAC and webhooks applied"
}

# service_account_kubeconfig SA: a kubeconfig with a token of tessera-system/SA.
service_account_kubeconfig() {
  local token
  token=$(kubectl_admin -n tessera-system create token "$1" --duration=48h) ||
    die "could not create a token for service account $1"
  kubeconfig_token "$kubeconfigs/$1.kubeconfig" "$token"
}

start_tessera_scheduler() {
  start tessera-scheduler -- "$tessera_build/bin/tessera" scheduler \
    --kubeconfig "$kubeconfigs/tessera-scheduler.kubeconfig" --listen="$host_ip:8443" \
    --scheduler.tls.cert="$pki/tessera-scheduler.crt" --scheduler.tls.key="$pki/tessera-scheduler.key" \
    --scheduler.node-policy=binpack --scheduler.gpu-policy=binpack --log.format=json
  wait_for tessera-scheduler 60 "ready Tessera scheduler" \
    curl -sf --max-time 2 --cacert "$pki/ca.crt" "$tessera_url/readyz"
  log "ok: tessera scheduler at $tessera_url (extender and webhooks)"
}

start_tessera_kube_scheduler() {
  local config=$dir/tessera-kube-scheduler/config.yaml
  mkdir -p "$dir/tessera-kube-scheduler"
  sed -e "s#urlPrefix: .*#urlPrefix: $tessera_url#" -e "s#caFile: .*#caFile: $pki/ca.crt#" \
    "$repo/deploy/scheduler/kube-scheduler-config.yaml" >"$config"
  printf 'clientConnection:\n  kubeconfig: %s\n' "$kubeconfigs/tessera-kube-scheduler.kubeconfig" >>"$config"
  local kc=$kubeconfigs/tessera-kube-scheduler.kubeconfig
  start tessera-kube-scheduler -- "$bin/kube-scheduler" --config="$config" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address="$loop_ip" --secure-port=10261 --cert-dir="$dir/tessera-kube-scheduler" --v=1
  wait_for tessera-kube-scheduler 60 "healthy kube-scheduler (tessera)" \
    curl -skf --max-time 2 "https://$loop_ip:10261/healthz"
  log "ok: kube-scheduler (profile tessera, extender $tessera_url)"
}

# The node agent with the DaemonSet's flags, which name the node's own /var/lib/kubelet,
# /var/run/cdi, /var/lib/tessera and /usr/local/lib/tessera; the library is installed there as the
# DaemonSet's init container does. The driver root and kubelet's cgroup root are this cluster's;
# housekeeping runs every 2 s instead of 30 s, so that tests see a wrong removal within seconds.
# DEV_CLUSTER_AGENT_ENV adds settings to the agent's environment (TESSERA_NODE_CDI=false ...).
start_node_agent() {
  local node=$1 nd extra=() e
  nd=$(node_dir "$node")
  for e in ${DEV_CLUSTER_AGENT_ENV:-}; do extra+=(--env "$e"); done
  local lib=$nd/usr-local/lib/tessera
  cp "$tessera_build/lib/libtessera-cuda.so" "$lib/.libtessera-cuda.so.new"
  mv -f "$lib/.libtessera-cuda.so.new" "$lib/libtessera-cuda.so"
  start "$node-tessera-node" --node "$node" --env "NODE_NAME=$node" "${extra[@]}" \
    --env "SIMGPU_STATE=/run/simgpu" --env "SIMGPU_DEV_ROOT=$nd/driver" -- "$tessera_build/bin/tessera" node \
    --kubeconfig "$kubeconfigs/tessera-node.kubeconfig" \
    --kubelet-dir=/var/lib/kubelet --cdi-dir=/var/run/cdi --state-dir=/var/lib/tessera \
    --node.library-path=/usr/local/lib/tessera/libtessera-cuda.so \
    --node.device-split-count=10 --node.metrics-listen=:9394 --log.format=json --log.level=debug \
    --node.nvml-library="$nd/driver/lib/libnvidia-ml.so.1" --node.driver-root="$nd/driver" \
    --node.kubelet-cgroup-root="/tsr$net-$node" --node.housekeeping-interval=2s
  wait_for "$node-tessera-node" 60 "GPUs published" node_has_gpus "$node"
  log "ok: $node tessera node agent: $(gpu_count "$node") GPUs, device plugins registered"
}

# The node's status counts devices of every resource of the agent, and its GPUs are published.
node_has_gpus() {
  local alloc
  alloc=$(kubectl_admin get node "$1" -o 'jsonpath={.status.allocatable}')
  python3 -c '
import json, sys
a = json.loads(sys.argv[1] or "{}")
names = ("nvidia.com/gpu", "tencent.com/vcuda-core", "tencent.com/vcuda-memory", "aliyun.com/gpu-mem")
sys.exit(0 if all(a.get(n, "0") != "0" for n in names) else 1)' "$alloc" &&
    kubectl_admin get node "$1" -o 'jsonpath={.metadata.annotations.tessera\.io/gpus}' | grep -q uuid
}
