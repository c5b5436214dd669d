# The cluster's DNS: CoreDNS as a Deployment in kube-system behind the Service kube-dns at
# $dns_ip, which every kubelet gives its pods (clusterDNS). Applied before the nodes come up, so
# that its pod starts as soon as one is Ready; `up` waits for it at the end. Sourced.

apply_cluster_dns() {
  sed -e "s#@DNS_IP@#$dns_ip#" -e "s#@IMAGE@#$coredns_image#" "$here/addons/coredns.yaml" |
    kubectl_admin apply -f - >>"$logs/setup.log" 2>&1 ||
    die "applying the cluster DNS (addons/coredns.yaml) failed (log: $logs/setup.log)"
}

wait_cluster_dns() {
  kubectl_admin -n kube-system rollout status deployment/coredns --timeout=120s >>"$logs/setup.log" 2>&1 ||
    die "CoreDNS did not become ready (kubectl -n kube-system describe pods -l k8s-app=kube-dns; log: $logs/setup.log)"
  log "ok: cluster DNS (CoreDNS at $dns_ip, cluster.local)"
}
