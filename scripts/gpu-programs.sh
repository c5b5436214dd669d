# Sourced by scripts/gpu-check and scripts/gpu-pack: the programs gpu-check runs, relative to a
# build folder, and gpu_build BUILD, which sets up and builds them there (returns non-zero on
# failure).
gpu_programs=(lib/libtessera-cuda.so bin/gpu_check bin/bench_hook tests/gpu_check_analysis_test
  tests/hook_probe tests/hook_churn tests/hook_hygiene_test tests/hook_limits_test
  tests/hook_alloc_map_test tests/hook_region_layout_test tests/hook_test tests/hook_churn_test)

gpu_build() {
  local root build=$1 p t targets=()
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  "$root/scripts/setup" || return 1
  cmake -S "$root" -B "$build" -G Ninja >/dev/null || return 1
  for p in "${gpu_programs[@]}"; do
    t=${p##*/}
    [[ $t == libtessera-cuda.so ]] && t=tessera_cuda
    targets+=("$t")
  done
  cmake --build "$build" --target "${targets[@]}"
}
