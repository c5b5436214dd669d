# Shared by the dev cluster's scripts: where things are, how processes are started, waited for and
# stopped. Sourced, never run.

# Everything the cluster makes lives under $dir; the names below only read it.
paths() {
  pki=$dir/pki
  tessera_certs=$dir/tessera-certs
  logs=$dir/logs
  pids=$dir/pids
  kubeconfigs=$dir/kubeconfig
  annotation_key=$dir/annotation-key
  admin_kubeconfig=$kubeconfigs/admin.kubeconfig
  host_ip=10.$net.0.1
  loop_ip=127.$net.0.1
  api_url=https://$host_ip:6443
  tessera_url=https://$host_ip:8443
  service_cidr=10.$net.240.0/20
  service_ip=10.$net.240.1
  dns_ip=10.$net.240.10
  bridge=tsr${net}br
}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  printf 'tessera-dev-cluster: %s\n' "$*" >&2
  exit 1
}

# A node's index (1-based), its netns, its address.
node_index() {
  local i
  for i in "${!nodes[@]}"; do [[ ${nodes[$i]} == "$1" ]] && { echo $((i + 1)); return; }; done
  die "no node named $1"
}
node_netns() { echo "tsr$net-$1"; }
node_mountns() { echo "$dir/ns/$1"; }
node_ip() { echo "10.$net.0.$((10 + $(node_index "$1")))"; }
node_dir() { echo "$dir/nodes/$1"; }
# The node's pods' addresses (its CNI bridge's range).
node_pod_cidr() { echo "10.$net.$(node_index "$1").0/24"; }

# start NAME [--node NODE] [--env K=V]... -- COMMAND...: starts COMMAND in its own session (so
# `down` can end its whole process group), in NODE's network and mount namespaces when given, logs
# to $logs/NAME.log, records its PID in $pids/NAME.
start() {
  local name=$1 node="" envs=()
  shift
  while [[ $1 != -- ]]; do
    case $1 in
      --node) node=$2; shift 2 ;;
      --env) envs+=("$2"); shift 2 ;;
      *) die "start: unknown option $1" ;;
    esac
  done
  shift
  local prefix=()
  [[ -n $node ]] && prefix=(nsenter "--net=/run/netns/$(node_netns "$node")" "--mount=$(node_mountns "$node")" --)
  mkdir -p "$logs" "$pids"
  env "${envs[@]}" setsid "${prefix[@]}" "$@" </dev/null >>"$logs/$name.log" 2>&1 &
  echo $! >"$pids/$name"
}

alive() {
  local pid
  pid=$(cat "$pids/$1" 2>/dev/null) || return 1
  running "$pid"
}

# A process that has ended but that PID 1 has not reaped yet (a zombie) counts as ended.
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

# wait_for NAME SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s until it succeeds; fails with
# the end of NAME's log when NAME dies or the time runs out.
wait_for() {
  local name=$1 seconds=$2 what=$3
  shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      tail -n 25 "$logs/$name.log" >&2
      die "$name ended before $what (log: $logs/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 25 "$logs/$name.log" >&2
      die "$name: no $what within $seconds s (log: $logs/$name.log)"
    fi
    sleep 0.2
  done
}

# stop NAME [SECONDS]: SIGTERM to NAME's process group, SIGKILL after SECONDS (default 10).
stop() {
  local name=$1 seconds=${2:-10} pid
  pid=$(cat "$pids/$name" 2>/dev/null) || return 0
  if running "$pid"; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + seconds))
    while running "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pids/$name"
}

kubectl_admin() { "$bin/kubectl" --kubeconfig "$admin_kubeconfig" "$@"; }

# curl with the admin's client certificate, for health endpoints.
curl_admin() {
  curl -sf --max-time 3 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"
}
