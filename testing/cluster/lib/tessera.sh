# Tessera on the dev cluster: deploy/'s namespace, RBAC and webhooks (and the DRA component's
# DeviceClass, rights and ResourceSlice policy) applied as they are, `tessera certgen` run as the
# certgen Job runs it (its certificates then copied out of their Secrets for the host processes),
# the scheduler extender and one node agent per node as host processes under their deploy/ service
# accounts and flags, and the second kube-scheduler with deploy/'s configuration (only its URLs and
# file paths changed). Sourced.

apply_deploy_objects() {
  local f
  for f in namespace.yaml scheduler/rbac.yaml scheduler/kube-scheduler-rbac.yaml node/rbac.yaml \
    webhook/webhooks.yaml webhook/certgen-rbac.yaml components/dra/deviceclass.yaml \
    components/dra/rbac.yaml components/dra/resourceslice-policy.yaml; do
    kubectl_admin apply -f "$repo/deploy/$f" >>"$logs/setup.log" 2>&1 ||
      die "applying deploy/$f failed (log: $logs/setup.log)"
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
  for account in tessera-scheduler tessera-kube-scheduler tessera-certgen; do
    service_account_kubeconfig "$account"
  done
  log "ok: deploy/ namespace, RBAC and webhooks applied"
}

# The names of the scheduler's certificate: certgen-job.yaml's, and the host's address, where
# kube-scheduler calls the extender.
certgen_hosts() {
  echo "tessera-scheduler,tessera-scheduler.tessera-system,tessera-scheduler.tessera-system.svc,tessera-scheduler.tessera-system.svc.cluster.local,tessera-scheduler-extender.tessera-system.svc,tessera-scheduler-extender.tessera-system.svc.cluster.local,localhost,127.0.0.1,$host_ip"
}

# `tessera certgen` under the certgen Job's service account, with a client certificate for the
# API server too, and no annotation key Secret (the host processes read make_annotation_key's file); then its Secrets copied to $tessera_certs (ca.crt, server.*, kube-scheduler.*,
# webhook-client.*) for the host processes. Its flags stay in $tessera_certs/certgen.args (one a
# line), so that a test can run it again as it ran.
run_certgen() {
  mkdir -p "$tessera_certs"
  chmod 0700 "$tessera_certs"
  printf '%s\n' --kubeconfig="$kubeconfigs/tessera-certgen.kubeconfig" \
    --certgen.hosts="$(certgen_hosts)" --certgen.webhook-client-name=kube-apiserver-webhook-client \
    --certgen.annotation-key-secret= >"$tessera_certs/certgen.args"
  local args
  mapfile -t args <"$tessera_certs/certgen.args"
  "$tessera_build/bin/tessera" certgen "${args[@]}" --log.format=json \
    >>"$logs/tessera-certgen.log" 2>&1 || die "tessera certgen failed (log: $logs/tessera-certgen.log)"
  copy_secret tessera-scheduler-tls server
  copy_secret tessera-kube-scheduler-client-tls kube-scheduler
  copy_secret tessera-webhook-client-tls webhook-client
  log "ok: tessera certgen: CA, serving and client certificates in Secrets"
}

# copy_secret SECRET NAME: its ca, cert and key to $tessera_certs/ca.crt, NAME.crt, NAME.key.
copy_secret() {
  local key file
  for key in ca cert key; do
    case $key in
    ca) file=ca.crt ;;
    cert) file=$2.crt ;;
    key) file=$2.key ;;
    esac
    kubectl_admin -n tessera-system get secret "$1" -o "jsonpath={.data.$key}" | base64 -d \
      >"$tessera_certs/$file.tmp" && [[ -s $tessera_certs/$file.tmp ]] ||
      die "Secret $1 has no key $key"
    mv -f "$tessera_certs/$file.tmp" "$tessera_certs/$file"
  done
}

# service_account_kubeconfig SA: a kubeconfig with a token of tessera-system/SA.
service_account_kubeconfig() {
  local token
  token=$(kubectl_admin -n tessera-system create token "$1" --duration=48h) ||
    die "could not create a token for service account $1"
  kubeconfig_token "$kubeconfigs/$1.kubeconfig" "$token"
}

# The key file the scheduler and every node agent share (docs/install.md): a fresh key for each
# cluster, made before the scheduler starts; the node agents read the same file.
make_annotation_key() {
  (umask 077 && openssl rand -base64 32 >"$annotation_key.tmp") && mv -f "$annotation_key.tmp" "$annotation_key" ||
    die "cannot write the annotation key file $annotation_key"
}

# The webhook's DRA mode is opt-in here (deploy/'s default is off): only pods labelled
# tessera.io/webhook=dra are rewritten to claims (cluster.dra), every other test's pods go on to
# the extender as before. The web page (docs/ui.md) is on here (off in deploy/): the demo opens it.
# /inspect and /fit are open here (scheduler.read-access=open; deploy/ asks a token): the demo's
# `kubectl tessera inspect --scheduler` and the page read them with the admin's certificate only.
start_tessera_scheduler() {
  start tessera-scheduler -- "$tessera_build/bin/tessera" scheduler \
    --kubeconfig "$kubeconfigs/tessera-scheduler.kubeconfig" --listen="$host_ip:8443" \
    --scheduler.tls.cert="$tessera_certs/server.crt" --scheduler.tls.key="$tessera_certs/server.key" \
    --scheduler.tls.client-ca="$tessera_certs/ca.crt" \
    --scheduler.tls.webhook-clients=kube-apiserver-webhook-client \
    --scheduler.annotation-key-file="$annotation_key" \
    --scheduler.node-policy=binpack --scheduler.gpu-policy=binpack --scheduler.webhook.dra=opt-in \
    --scheduler.ui.enabled=true --scheduler.read-access=open --log.format=json
  wait_for tessera-scheduler 60 "ready Tessera scheduler" \
    curl -sf --max-time 2 --cacert "$tessera_certs/ca.crt" "$tessera_url/readyz"
  log "ok: tessera scheduler at $tessera_url (extender and webhooks; web page $tessera_url/ui/)"
}

start_tessera_kube_scheduler() {
  local config=$dir/tessera-kube-scheduler/config.yaml
  mkdir -p "$dir/tessera-kube-scheduler"
  sed -e "s#urlPrefix: .*#urlPrefix: $tessera_url#" -e "s#caFile: .*#caFile: $tessera_certs/ca.crt#" \
    -e "s#certFile: .*#certFile: $tessera_certs/kube-scheduler.crt#" \
    -e "s#keyFile: .*#keyFile: $tessera_certs/kube-scheduler.key#" \
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
  node_agent_kubeconfig "$node"
  start "$node-tessera-node" --node "$node" --env "NODE_NAME=$node" "${extra[@]}" \
    --env "SIMGPU_STATE=/run/simgpu" --env "SIMGPU_DEV_ROOT=$driver_root" -- "$tessera_build/bin/tessera" node \
    --kubeconfig "$kubeconfigs/tessera-node-$node.kubeconfig" \
    --kubelet-dir=/var/lib/kubelet --cdi-dir=/var/run/cdi --state-dir=/var/lib/tessera \
    --node.library-path=/usr/local/lib/tessera/libtessera-cuda.so \
    --node.device-split-count=10 --node.metrics-listen=:9394 --log.format=json --log.level=debug \
    --node.nvml-library="$driver_root/lib/libnvidia-ml.so.1" --node.driver-root="$driver_root" \
    --node.sysfs-root="$driver_root/sys" \
    --node.kubelet-cgroup-root="/tsr$net-$node" --node.housekeeping-interval=2s \
    --node.annotation-key-file="$annotation_key"
  if [[ " ${DEV_CLUSTER_AGENT_ENV:-} " == *" TESSERA_NODE_MODE=dra "* ]]; then
    wait_for "$node-tessera-node" 60 "ResourceSlice published" node_has_slice "$node"
    log "ok: $node tessera node agent in DRA mode: ResourceSlice published"
    return
  fi
  wait_for "$node-tessera-node" 60 "GPUs published" node_has_gpus "$node"
  log "ok: $node tessera node agent: $(gpu_count "$node") GPUs, device plugins registered"
}

# A ResourceSlice of Tessera's DRA driver for the node has devices (docs/dra.md).
node_has_slice() {
  kubectl_admin get resourceslices -o json | python3 -c '
import json, sys
sys.exit(0 if any(s["spec"]["driver"] == "gpu.tessera.io" and s["spec"].get("nodeName") == sys.argv[1]
                  and s["spec"].get("devices") for s in json.load(sys.stdin)["items"]) else 1)' "$1"
}

# A kubeconfig of the node agent's service account with a token bound to its Node, as the
# DaemonSet pod's token is bound to its pod on that node: the token names the node
# (authentication.kubernetes.io/node-name), which deploy/'s ResourceSlice policy checks.
node_agent_kubeconfig() {
  local token
  token=$(kubectl_admin -n tessera-system create token tessera-node --duration=48h \
    --bound-object-kind=Node --bound-object-name="$1") ||
    die "could not create a token of tessera-node bound to node $1"
  kubeconfig_token "$kubeconfigs/tessera-node-$1.kubeconfig" "$token"
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
