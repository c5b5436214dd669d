#!/usr/bin/env bash
# kubectl-tessera as users get it: its own program that links no server code, installed by
# `cmake --install`, found by kubectl on PATH, reading the tessera-fake-apiserver program through
# a KUBECONFIG list whose user is an exec credential plugin; and packed for krew.
#   kubectl_plugin_test.sh SOURCE_DIR BUILD_DIR VERSION
set -u
src=$1
build=$2
version=$3
plugin=$build/bin/kubectl-tessera
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL $*"; exit 1; }

[[ -x $plugin && ! -L $plugin ]] || fail "$plugin is not a program of its own"
if ldd "$plugin" | grep -Eq 'grpc|protobuf'; then fail "links gRPC: $(ldd "$plugin" | grep -E 'grpc|protobuf')"; fi
servers=$(nm -C --defined-only "$plugin" |
  grep -E 'tessera::(node|certgen|demo)::|tessera::scheduler::(Engine|ClusterState|Binder|HttpServer|Preemptor)\b' | head -3)
[[ -z $servers ]] || fail "links server code: $servers"
echo "ok   a program of its own, without gRPC, node agent or scheduler server code"

cmake --install "$build" --component kubectl-plugin --prefix "$dir/prefix" >/dev/null ||
  fail "cmake --install --component kubectl-plugin"
[[ -x $dir/prefix/bin/kubectl-tessera ]] || fail "not installed to PREFIX/bin"
echo "ok   cmake --install puts it in PREFIX/bin"

out=$("$plugin" --help) || fail "--help exits $?"
[[ $out == *"kubectl tessera version"* && $out == *"--context"* && $out == *"--no-headers"* ]] ||
  fail "--help: $out"
echo "ok   --help"

"$build/bin/tessera-fake-apiserver" --listen 127.0.0.1:0 >"$dir/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$dir/api.log" && break; sleep 0.1; done
api=$(sed -n 's/^listening on //p' "$dir/api.log" | head -1)
[[ -n $api ]] || fail "the fake API server did not start: $(cat "$dir/api.log")"
post() {  # post PATH JSON
  curl -sf -X POST -H 'Content-Type: application/json' -d "$2" "$api$1" >/dev/null || fail "POST $1"
}
gpus='{\"version\":1,\"gpus\":[{\"uuid\":\"GPU-0\",\"index\":0,\"model\":\"SimGPU\",\"memoryMiB\":1024}]}'
post /api/v1/nodes "{\"metadata\":{\"name\":\"gpu-1\",\"annotations\":{\"tessera.io/gpus\":\"$gpus\"}}}"

# The user's credential comes from an exec plugin; contexts and clusters from two files.
cat >"$dir/get-token" <<'PLUGIN'
#!/bin/sh
echo ran >> "$(dirname "$0")/plugin-runs"
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'
PLUGIN
chmod +x "$dir/get-token"
printf 'current-context: fake\ncontexts: [{name: fake, context: {cluster: fake, user: sso}}]\n' \
  >"$dir/contexts"
cat >"$dir/clusters" <<KUBECONFIG
clusters: [{name: fake, cluster: {server: "$api"}}]
users:
- name: sso
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./get-token}
KUBECONFIG
export KUBECONFIG=$dir/contexts:$dir/clusters

out=$("$plugin" -ojsonpath='{.nodes[*].gpus[*].uuid}' 2>&1) || fail "inspect exits $?: $out"
[[ $out == "GPU-0" ]] || fail "inspect -o jsonpath: [$out]"
[[ -s $dir/plugin-runs ]] || fail "the exec plugin did not run"
echo "ok   inspect through a KUBECONFIG list and an exec credential plugin"

out=$("$plugin" version 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"kubectl-tessera $version"* && $out == *"no running scheduler pod"* ]] ||
  fail "version without a scheduler: exit $rc: $out"
post /api/v1/namespaces '{"metadata":{"name":"tessera-system"}}'
post /api/v1/namespaces/tessera-system/pods '{"metadata":{"name":"sched","namespace":"tessera-system",
  "labels":{"app.kubernetes.io/name":"tessera-scheduler"}},
  "spec":{"containers":[{"name":"tessera","image":"reg.example/tessera:7.7.7"}]}}'
out=$("$plugin" version 2>&1) || fail "version exits $?: $out"
[[ $out == "kubectl-tessera $version"$'\n'"scheduler 7.7.7 (pod tessera-system/sched, image reg.example/tessera:7.7.7)" ]] ||
  fail "version: $out"
echo "ok   version: the plugin's and the scheduler's"

if command -v kubectl >/dev/null; then
  out=$(PATH="$dir/prefix/bin:$PATH" kubectl tessera inspect --no-headers 2>&1) ||
    fail "kubectl tessera inspect exits $?: $out"
  [[ $out == "gpu-1"*"SimGPU"* ]] || fail "kubectl tessera inspect --no-headers: $out"
  echo "ok   kubectl finds the installed plugin"
else
  echo "skip kubectl is not installed"
fi
# The krew archive of this architecture and its manifest (scripts/krew-package --arch host).
"$src/scripts/krew-package" --build "$build" --out "$dir/krew" --arch host \
  --url-base https://downloads.example/v@VERSION@ >"$dir/krew.log" 2>&1 ||
  fail "krew-package exits $?: $(cat "$dir/krew.log")"
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
archive=$dir/krew/kubectl-tessera_v${version}_linux_$arch.tar.gz
[[ $(tar -tzf "$archive") == kubectl-tessera ]] || fail "$archive holds: $(tar -tzf "$archive")"
sum=$(sha256sum "$archive" | cut -d' ' -f1)
python3 - "$dir/krew/tessera.yaml" "$version" "$arch" "$sum" <<'PY' || fail "the krew manifest"
import sys, yaml
path, version, arch, sha = sys.argv[1:]
m = yaml.safe_load(open(path))
assert m["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2", m["apiVersion"]
assert m["kind"] == "Plugin" and m["metadata"]["name"] == "tessera"
assert m["spec"]["version"] == "v" + version, m["spec"]["version"]
[p] = m["spec"]["platforms"]  # only the architecture built
assert p["selector"]["matchLabels"] == {"os": "linux", "arch": arch}, p["selector"]
assert p["sha256"] == sha, (p["sha256"], sha)
assert p["uri"] == f"https://downloads.example/v{version}/kubectl-tessera_v{version}_linux_{arch}.tar.gz", p["uri"]
assert p["bin"] == "kubectl-tessera" and p["files"] == [{"from": "kubectl-tessera", "to": "."}]
PY
echo "ok   krew-package: the archive and a manifest with its sha256"
exit 0
