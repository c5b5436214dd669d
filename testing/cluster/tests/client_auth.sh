#!/usr/bin/env bash
# The scheduler's endpoints authenticate their clients on the real cluster
# (scheduler.tls.client-ca, certificates made by `tessera certgen`): kube-scheduler places a GPU
# pod through the extender with its client certificate and the API server calls the webhooks with
# its own, while a client without a certificate, with one of another CA, or with the wrong one
# gets nothing from /bind, /filter or /validate; health endpoints answer everyone. certgen run
# again keeps the certificates it made.
source "$(dirname "$0")/lib.sh"

net=$(sed -n 's/^declare -- net="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
tessera_build=$(sed -n 's/^declare -- tessera_build="\(.*\)"$/\1/p' "$cluster_dir/cluster.env")
url=https://10.$net.0.1:8443
certs=$cluster_dir/tessera-certs
pki=$cluster_dir/pki

# status PATH [CURL_ARGS...]: the HTTP status of a POST of {} to PATH, or "none" when no answer
# came (the handshake failed).
status() {
  local path=$1 code
  shift
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$certs/ca.crt" "$@" \
    -H 'Content-Type: application/json' -d '{}' "$url$path") || code=none
  echo "$code"
}
as_kube_scheduler=(--cert "$certs/kube-scheduler.crt" --key "$certs/kube-scheduler.key")
as_webhook_client=(--cert "$certs/webhook-client.crt" --key "$certs/webhook-client.key")
as_cluster_admin=(--cert "$pki/admin.crt" --key "$pki/admin.key")

body=$(curl -s --max-time 5 --cacert "$certs/ca.crt" -H 'Content-Type: application/json' -d '{}' \
  "$url/bind" || true)
echo "  | /bind without a certificate: $body"
check "/bind without a client certificate is refused (403)" test "$(status /bind)" = 403
check "the refusal names the client that may bind" grep -q tessera-kube-scheduler <<<"$body"
for path in /filter /prioritize /validate /mutate; do
  code=$(status $path)
  check "$path without a client certificate is refused ($code)" test "$code" = 403
done
code=$(status /bind "${as_cluster_admin[@]}")
check "a certificate of another CA (the cluster admin's) gets no answer ($code)" test "$code" = none
code=$(status /bind "${as_webhook_client[@]}")
check "the API server's certificate may not bind ($code)" test "$code" = 403
code=$(status /validate "${as_kube_scheduler[@]}")
check "kube-scheduler's certificate may not call the webhooks ($code)" test "$code" = 403
code=$(status /filter "${as_kube_scheduler[@]}")
check "kube-scheduler's certificate may call /filter (answer $code)" test "$code" = 400 -o "$code" = 200
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$certs/ca.crt" "$url/healthz" || true)
check "/healthz answers without a certificate ($code)" test "$code" = 200

# The API server presents its certificate: the mutating webhook sets schedulerName, and the pod
# is placed by kube-scheduler through the extender.
k delete pod client-auth --ignore-not-found --wait=true >/dev/null
example_pod vgpu-pod.yaml client-auth | k create -f - >/dev/null
check_completes client-auth 180
scheduler=$(k get pod client-auth -o 'jsonpath={.spec.schedulerName}')
check "the webhook, called with the API server's certificate, set schedulerName ($scheduler)" \
  test "$scheduler" = tessera
reporter=$(k get events --field-selector involvedObject.name=client-auth,reason=Scheduled \
  -o 'jsonpath={.items[0].reportingComponent}')
check "kube-scheduler (profile tessera) placed it through the extender ($reporter)" \
  test "$reporter" = tessera
k delete pod client-auth --wait=true >/dev/null

versions() {
  k -n tessera-system get secret tessera-scheduler-tls tessera-kube-scheduler-client-tls \
    tessera-webhook-client-tls -o 'jsonpath={.items[*].metadata.resourceVersion}'
}
before=$(versions)
mapfile -t args <"$certs/certgen.args"  # the flags the cluster ran it with
rerun=$("$tessera_build/bin/tessera" certgen "${args[@]}" 2>&1) || fail "certgen re-run: $rerun"
echo "$rerun" | sed 's/^/  | /'
check "certgen run again keeps the certificates (Secrets unchanged)" test "$(versions)" = "$before"
check "and says so" grep -q "certificates kept" <<<"$rerun"
metrics=$(curl -s --max-time 5 --cacert "$certs/ca.crt" "$url/metrics" || true)
refused=$(sed -n 's/^tessera_scheduler_unauthorized_requests_total //p' <<<"$metrics")
check "the refusals are counted (tessera_scheduler_unauthorized_requests_total $refused)" \
  test "${refused:-0}" -ge 7
finish
