#!/usr/bin/env bash
# Compiles the static_asserts that abi_values prints (Tessera's declarations) against NVIDIA's
# cuda.h. Exit 77 (CTest: skipped) when cuda.h is not installed.
# Usage: cuda_h_crosscheck.sh ABI_VALUES_BINARY CXX [CUDA_INCLUDE_DIR]
set -euo pipefail
values=$1
cxx=$2
include=${3:-${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}}
if [[ ! -f $include/cuda.h ]]; then
  echo "cuda.h not found in $include: cross-check skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$values" > "$work/check.cc"
"$cxx" -std=c++17 -fsyntax-only -I"$include" "$work/check.cc"
echo "$(grep -c static_assert "$work/check.cc") declarations match $include/cuda.h"
