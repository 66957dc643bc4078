#!/usr/bin/env bash
# .ci/cuda_only.sh: CI's check that the CUDA-only build still compiles. No GPU is needed.
#
#   bash .ci/cuda_only.sh [BUILD_DIR]          (default BUILD_DIR: build-cuda-only)
#
# Configures a separate folder with -DTAUPLAN_CUDA_ONLY=ON, as exec/cuda/gpu_check.sh does on a
# GPU machine, and builds what gpu_check.sh builds (tauplan_cuda_grad_check,
# tauplan_cuda_bench_step, tauplan_cuda_profile and tauplan_cuda_transformer_check), with
# warnings as errors. OpenBLAS is left out
# (-DTAUPLAN_WITH_OPENBLAS=OFF) because a bare GPU machine has CUDA and Eigen headers only, so
# the CPU reference compiles on its Eigen fallback here too. Then it runs the gradient check,
# which must load (no link to the CUDA driver) and exit 0 (a GPU passed) or 77 (no GPU).
# Prints "cuda_only: skipped: no nvcc" and exits 0 when no CUDA compiler is found (nvcc on
# PATH, or /usr/local/cuda/bin/nvcc). Set CMAKE_CXX_COMPILER_LAUNCHER=ccache (and
# CMAKE_CUDA_COMPILER_LAUNCHER) in the environment to reuse a compiler cache.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-cuda-only}

nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ]; then
  echo "cuda_only: skipped: no nvcc"
  exit 0
fi

start=$(date +%s)
echo "cuda_only: $("$nvcc" --version | tail -1), build folder $build"
cmake -S "$root" -B "$build" -DTAUPLAN_CUDA_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DTAUPLAN_WERROR=ON -DTAUPLAN_WITH_OPENBLAS=OFF
cmake --build "$build" -j2 --target tauplan_cuda_grad_check tauplan_cuda_bench_step \
  tauplan_cuda_profile tauplan_cuda_transformer_check

set +e
"$build/exec/tauplan_cuda_grad_check" > "$build/grad_check.txt" 2>&1
rc=$?
set -e
tail -3 "$build/grad_check.txt"
case $rc in
  0) echo "cuda_only: built; gradient check passed on a GPU" ;;
  77) echo "cuda_only: built; gradient check skipped (no GPU), as expected without one" ;;
  *)
    echo "cuda_only: gradient check exited $rc (expected 0 or 77)" >&2
    exit 1
    ;;
esac
echo "cuda_only: done in $(($(date +%s) - start)) s"
