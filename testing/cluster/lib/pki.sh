# Certificates and kubeconfigs of the dev cluster, made with openssl (EC P-256, one CA). Sourced.

# cert NAME SUBJECT USAGE [SAN]: $pki/NAME.{key,crt} signed by the cluster CA; USAGE is
# clientAuth, serverAuth or both.
cert() {
  local name=$1 subject=$2 usage=$3 san=${4:-}
  local ext=$pki/$name.ext
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [[ -n $san ]] && echo "subjectAltName=$san"
  } >"$ext"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

make_pki() {
  mkdir -p "$pki" "$kubeconfigs"
  chmod 0700 "$pki"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=tessera-dev-cluster-ca" -days 365 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$pki/ca.crt" 2>/dev/null
  cert apiserver "/CN=kube-apiserver" serverAuth \
    "IP:$host_ip,IP:127.0.0.1,IP:$service_ip,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  cert admin "/O=system:masters/CN=tessera-dev-admin" clientAuth
  cert controller-manager "/CN=system:kube-controller-manager" clientAuth
  cert scheduler "/CN=system:kube-scheduler" clientAuth
  # kube-proxy's user, bound to system:node-proxier by the API server's default RBAC.
  cert kube-proxy "/CN=system:kube-proxy" clientAuth
  local node
  for node in "${nodes[@]}"; do
    cert "kubelet-$node" "/O=system:nodes/CN=system:node:$node" clientAuth
    cert "kubelet-$node-serving" "/CN=$node" serverAuth "DNS:$node,IP:$(node_ip "$node")"
  done
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
  openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

  kubeconfig_cert admin admin
  kubeconfig_cert controller-manager controller-manager
  kubeconfig_cert scheduler scheduler
  kubeconfig_cert kube-proxy kube-proxy
  for node in "${nodes[@]}"; do kubeconfig_cert "kubelet-$node" "kubelet-$node"; done
}

# kubeconfig_cert NAME CERT: $kubeconfigs/NAME.kubeconfig with the client certificate CERT.
kubeconfig_cert() {
  kubeconfig_write "$kubeconfigs/$1.kubeconfig" \
    "    client-certificate-data: $(base64 -w0 "$pki/$2.crt")
    client-key-data: $(base64 -w0 "$pki/$2.key")"
}

# kubeconfig_token FILE TOKEN: a kubeconfig that authenticates with a bearer token (service
# accounts of the Tessera parts, as their pods would).
kubeconfig_token() {
  kubeconfig_write "$1" "    token: $2"
}

kubeconfig_write() {
  local file=$1 user=$2
  cat >"$file.tmp" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: tessera-dev
  cluster:
    server: $api_url
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: user
  user:
$user
contexts:
- name: tessera-dev
  context:
    cluster: tessera-dev
    user: user
    namespace: default
current-context: tessera-dev
EOT
  chmod 0600 "$file.tmp"
  mv "$file.tmp" "$file"
}
