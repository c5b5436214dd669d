#!/usr/bin/env bash
# The library on arm64 (GH200/GB200 nodes): cross-builds libtessera-cuda.so, simgpu and hook_probe
# for aarch64 with Debian's cross toolchain (scripts/setup installs it), checks the library's
# hygiene there (no glibc symbol newer than GLIBC_2.17, no C++ runtime), and runs the probe's
# scenarios under qemu-user with the library preloaded over the arm64 simgpu.
#
#   arm64_cross_test.sh SOURCES_FILE WORK_DIR
#
# SOURCES_FILE (written by CMake) names the source root and the sources and options of each
# target. Exits 77 (skipped) without aarch64-linux-gnu-g++ or qemu-aarch64. The gtest-based tests
# (hook_test and the unit tests) are not run there: there is no arm64 GoogleTest to link.
set -euo pipefail
sources_file=$1
work=$2
# shellcheck source=/dev/null
source "$sources_file"  # root, hook_dir, simgpu_dir and each target's sources (relative to its dir)

for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ aarch64-linux-gnu-objdump qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed (scripts/setup)"; exit 77; }
done
sysroot=/usr/aarch64-linux-gnu
rm -rf "$work" && mkdir -p "$work/lib/simgpu" "$work/obj"
fail() { echo "FAIL: $*" >&2; exit 1; }
in_dir() {  # in_dir DIR FILES...: the files, relative ones taken in DIR
  local dir=$1
  shift
  for f in "$@"; do [[ $f = /* ]] && echo "$f" || echo "$dir/$f"; done
}

# The library, with the options of its native build.
# shellcheck disable=SC2086
aarch64-linux-gnu-gcc $hook_options -Wall -Wextra -I"$root/src" -shared -o "$work/lib/libtessera-cuda.so" \
  $(in_dir "$hook_dir" $hook_sources) -Wl,--version-script="$root/src/hook/exports.map" -Wl,-z,defs -Wl,-z,now \
  -Wl,-z,nodelete -Wl,--no-as-needed -nodefaultlibs -l:libdl.so.2 -l:libpthread.so.0 -lc -lgcc
symbols=$(aarch64-linux-gnu-objdump -T "$work/lib/libtessera-cuda.so")
newer=$(grep -oE 'GLIBC_2\.(1[89]|[2-9][0-9])[0-9.]*' <<<"$symbols" | sort -u || true)
[[ -z $newer ]] || fail "glibc versions newer than 2.17: $newer"$'\n'"$(grep -E "$(tr '\n' '|' <<<"$newer" | sed 's/|$//')" <<<"$symbols")"
needed=$(aarch64-linux-gnu-objdump -p "$work/lib/libtessera-cuda.so" | awk '/NEEDED/ {print $2}')
grep -qE 'libstdc\+\+|libgcc_s' <<<"$needed" && fail "links a C++ runtime: $needed"
echo "libtessera-cuda.so (aarch64): no glibc symbol newer than GLIBC_2.17; needs $(tr '\n' ' ' <<<"$needed")"

# simgpu and the probe.
cxx=(aarch64-linux-gnu-g++ -std=c++20 -O1 -fPIC -I"$root/src" -I"$root/testing/simgpu")
objects() {  # objects NAME SOURCES...: compiles the sources two at a time into obj/NAME/
  local name=$1
  shift
  mkdir -p "$work/obj/$name"
  printf '%s\n' "$@" | xargs -P 2 -I{} sh -c \
    'src={}; "$0" "$@" -c "$src" -o "'"$work/obj/$name"'/$(echo "$src" | tr / _).o"' "${cxx[@]}"
}
# shellcheck disable=SC2046
objects core $(in_dir "$simgpu_dir" $core_sources)
# shellcheck disable=SC2046
objects cuda $(in_dir "$simgpu_dir" $cuda_sources)
# shellcheck disable=SC2046
objects nvml $(in_dir "$simgpu_dir" $nvml_sources)
link_so() {
  "${cxx[@]}" -shared -o "$work/lib/simgpu/$1" -Wl,-soname,"$1" "$work"/obj/"$2"/*.o \
    "$work"/obj/core/*.o -Wl,--version-script="$root/testing/simgpu/exports.map" -lpthread
}
link_so libcuda.so.1 cuda
link_so libnvidia-ml.so.1 nvml
"${cxx[@]}" -o "$work/hook_probe" "$root/src/hook/tests/probe.cc" "$root/src/hook/tests/probe_api.cc" \
  "$work/lib/simgpu/libcuda.so.1" "$work/lib/simgpu/libnvidia-ml.so.1" -ldl

# The probe's scenarios under qemu-user, each with its own simgpu state and region.
run() {  # run DEVICES LIMIT ROUTE COMMAND ARGS...
  local devices=$1 limit=$2
  shift 2
  local dir
  dir=$(mktemp -d "$work/run-XXXXXX")
  mkdir -p "$dir/state"
  if ! qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$work/lib/simgpu" \
      -E LD_PRELOAD="$work/lib/libtessera-cuda.so" -E SIMGPU_STATE="$dir/state" \
      -E SIMGPU_DEVICES="$devices" -E CUDA_DEVICE_MEMORY_LIMIT="$limit" \
      -E CUDA_DEVICE_MEMORY_SHARED_CACHE="$dir/region" "$work/hook_probe" "$@" >"$dir/out" 2>&1; then
    fail "hook_probe $* under qemu-aarch64:"$'\n'"$(cat "$dir/out")"
  fi
  echo "ok: hook_probe $*"
}
# Contexts cost nothing here (ctxmem=0): under qemu-user simgpu's NVML counts this process's memory
# as 0, so a context's cost cannot be measured as on a machine of its own, and `paths` (which needs
# a context to cost something) is left out.
mib=$((1 << 20))
for route in direct runtime; do
  run count=1,memory=16GiB 256m "$route" boundary $((256 * mib))
  run count=1,memory=16GiB 256m "$route" vmm $((256 * mib))
  run count=1,memory=16GiB 256m "$route" pools $((256 * mib))
  run count=1,memory=16GiB 256m "$route" heap $((256 * mib))
  run count=1,memory=16GiB 256m "$route" graphs $((256 * mib))
  run count=1,memory=16GiB 1g "$route" contexts
done
run count=1,memory=16GiB 1g direct fork $((1 << 30))
run count=1,memory=16GiB 1g direct retain-race 8 0
