# The names of the images build-images makes, shared by it, the dev cluster and its tests. The
# upstream programs' images are tagged with the release their Go module pins. Sourced.

upstream_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../upstream" && pwd)

# pinned MODULE_FOLDER MODULE_PATH: the version go.mod requires of MODULE_PATH.
pinned() {
  local v
  v=$(awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$upstream_dir/$1/go.mod")
  [[ -n $v ]] || { echo "images: $upstream_dir/$1/go.mod does not require $2" >&2; return 1; }
  echo "$v"
}

pause_image=tessera.local/pause:3.10
workload_image=tessera.local/workload:dev
tessera_image_repo=tessera.local/tessera
tessera_image=$tessera_image_repo:dev
kube_scheduler_image=tessera.local/kube-scheduler:$(pinned kubernetes k8s.io/kubernetes)
coredns_image=tessera.local/coredns:$(pinned coredns github.com/coredns/coredns)
