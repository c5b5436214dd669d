# The control plane of the dev cluster, as host processes: etcd on loopback, kube-apiserver with
# TLS, Node+RBAC authorization and NodeRestriction, kube-controller-manager, and the default
# kube-scheduler. Sourced.

start_etcd() {
  mkdir -p "$dir/etcd"
  # --unsafe-no-fsync: a test cluster's data does not need to survive a power cut, and fsync on
  # a loaded 2-core VM makes etcd miss its deadlines.
  start etcd -- "$bin/etcd" --name tessera-dev --data-dir "$dir/etcd/data" \
    --listen-client-urls "http://$loop_ip:2379" --advertise-client-urls "http://$loop_ip:2379" \
    --listen-peer-urls "http://$loop_ip:2380" --initial-advertise-peer-urls "http://$loop_ip:2380" \
    --initial-cluster "tessera-dev=http://$loop_ip:2380" --listen-metrics-urls "http://$loop_ip:2381" \
    --log-level warn --unsafe-no-fsync
  wait_for etcd 60 "healthy etcd" curl -sf --max-time 2 "http://$loop_ip:2381/health"
  log "ok: etcd on $loop_ip:2379"
}

# The API server presents to Tessera's webhooks the client certificate that `tessera certgen`
# makes for it (certgen.webhook-client-name), as a cluster admin sets it up (docs/install.md,
# "Client certificates"). The files appear once certgen has run; the API server reads them when
# it first calls the webhooks.
write_admission_config() {
  mkdir -p "$dir/apiserver"
  cat >"$dir/apiserver/webhook-clients.kubeconfig" <<EOT
apiVersion: v1
kind: Config
users:
- name: tessera-scheduler.tessera-system.svc:8443
  user:
    client-certificate: $tessera_certs/webhook-client.crt
    client-key: $tessera_certs/webhook-client.key
EOT
  local plugin
  {
    echo "apiVersion: apiserver.config.k8s.io/v1"
    echo "kind: AdmissionConfiguration"
    echo "plugins:"
    for plugin in ValidatingAdmissionWebhook MutatingAdmissionWebhook; do
      echo "- name: $plugin"
      echo "  configuration:"
      echo "    apiVersion: apiserver.config.k8s.io/v1"
      echo "    kind: WebhookAdmissionConfiguration"
      echo "    kubeConfigFile: $dir/apiserver/webhook-clients.kubeconfig"
    done
  } >"$dir/apiserver/admission.yaml"
}

# With Tessera's parts as host processes, the API server presents certgen's client certificate to
# the webhooks and dials the webhook Service's endpoint (the host) rather than its cluster IP.
# Without them it is an API server as a cluster has before Tessera is installed: webhooks are
# called at their Service's cluster IP (through kube-proxy, lib/network.sh).
start_apiserver() {
  local tessera_flags=()
  if [[ $tessera_mode == host ]]; then
    write_admission_config
    tessera_flags=(--admission-control-config-file="$dir/apiserver/admission.yaml"
      --enable-aggregator-routing=true)
  fi
  start kube-apiserver -- "$bin/kube-apiserver" \
    --advertise-address="$host_ip" --bind-address="$host_ip" --secure-port=6443 \
    --etcd-servers="http://$loop_ip:2379" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction "${tessera_flags[@]}" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range="$service_cidr" \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --allow-privileged=true --profiling=false --v=1
  wait_for kube-apiserver 120 "ready API server" curl_admin "$api_url/readyz"
  log "ok: kube-apiserver at $api_url"
}

start_controller_manager() {
  local kc=$kubeconfigs/controller-manager.kubeconfig
  start kube-controller-manager -- "$bin/kube-controller-manager" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address="$loop_ip" --secure-port=10257 --cert-dir="$dir/kube-controller-manager" \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --service-cluster-ip-range="$service_cidr" --cluster-name=tessera-dev \
    --controllers="${DEV_CLUSTER_CONTROLLERS:-*}" --leader-elect=false --profiling=false --v=1
  wait_for kube-controller-manager 60 "healthy controller manager" \
    curl -skf --max-time 2 "https://$loop_ip:10257/healthz"
  log "ok: kube-controller-manager"
}

start_default_scheduler() {
  local kc=$kubeconfigs/scheduler.kubeconfig config=$dir/kube-scheduler/config.yaml
  mkdir -p "$dir/kube-scheduler"
  cat >"$config" <<EOT
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $kc
leaderElection:
  leaderElect: false
EOT
  start kube-scheduler -- "$bin/kube-scheduler" --config="$config" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address="$loop_ip" --secure-port=10259 --cert-dir="$dir/kube-scheduler" --v=1
  wait_for kube-scheduler 60 "healthy kube-scheduler" curl -skf --max-time 2 "https://$loop_ip:10259/healthz"
  log "ok: kube-scheduler (default-scheduler)"
}
