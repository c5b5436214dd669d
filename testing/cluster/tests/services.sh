#!/usr/bin/env bash
# Services on the real cluster: a pod on node-a reaches, by its DNS name, a Service whose only pod
# runs on node-b (CoreDNS answers the name, kube-proxy on node-a sends the cluster IP across to
# node-b), and the API server through the `kubernetes` Service; pods reach each other across
# nodes by pod IP; the host reaches the Service's cluster IP (as the API server does a webhook's).
source "$(dirname "$0")/lib.sh"

k delete pod,service -l test=services --ignore-not-found --wait=true >/dev/null
k apply -f - >/dev/null <<'EOT'
apiVersion: v1
kind: Pod
metadata:
  name: services-server
  labels: {test: services, role: server}
spec:
  nodeSelector: {kubernetes.io/hostname: node-b}
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: tessera.local/workload:dev
    command: ["sh", "-c", "mkdir -p /tmp/www && echo served by $(hostname) >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
    ports: [{containerPort: 8080, name: http}]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: services-echo
  labels: {test: services}
spec:
  selector: {test: services, role: server}
  ports: [{port: 80, targetPort: http}]
EOT
check "the server pod runs on node-b" k wait --for=condition=Ready pod/services-server --timeout=120s
server_ip=$(k get pod services-server -o 'jsonpath={.status.podIP}')
cluster_ip=$(k get service services-echo -o 'jsonpath={.spec.clusterIP}')
echo "  server pod $server_ip, Service cluster IP $cluster_ip"

k apply -f - >/dev/null <<EOT
apiVersion: v1
kind: Pod
metadata:
  name: services-client
  labels: {test: services}
spec:
  nodeSelector: {kubernetes.io/hostname: node-a}
  restartPolicy: Never
  containers:
  - name: client
    image: tessera.local/workload:dev
    command:
    - sh
    - -c
    - |
      # HTTP by hand with nc: Debian's static busybox wget crashes here (exit 139, even for an address).
      get() { printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 "\$1" "\$2" | tail -n1; }
      echo "name=\$(nslookup services-echo.default.svc.cluster.local | awk '/^Address: / {a=\$2} END {print a}')"
      echo "by-name=\$(get services-echo 80)"
      echo "by-fqdn=\$(get services-echo.default.svc.cluster.local 80)"
      echo "by-pod-ip=\$(get $server_ip 8080)"
      printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 kubernetes.default.svc.cluster.local 443 | head -n1 | sed 's/^/api=/'
EOT
phase=$(wait_phase services-client 120 Succeeded Failed) || true
check "the client pod on node-a ran (phase $phase)" test "$phase" = Succeeded
logs=$(k logs services-client 2>&1 || true)
echo "$logs" | sed 's/^/  | /'
check "CoreDNS answered the Service's name with its cluster IP" test "$(value name "$logs")" = "$cluster_ip"
check "the client reached the Service by its short name" test "$(value by-name "$logs")" = "served by services-server"
check "and by its full name" test "$(value by-fqdn "$logs")" = "served by services-server"
check "it reached the pod on node-b by its pod IP" test "$(value by-pod-ip "$logs")" = "served by services-server"
check "it reached the API server through the kubernetes Service (it answered plain HTTP with 400)" \
  grep -q "^api=HTTP/1.[01] 400" <<<"$logs"
check "the host reaches the Service's cluster IP" \
  test "$(curl -s --max-time 5 "http://$cluster_ip/")" = "served by services-server"
k delete pod,service -l test=services --wait=true >/dev/null
finish
