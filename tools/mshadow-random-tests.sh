#!/usr/bin/env bash
# Builds and runs mshadow's own random test programs against tensorexpr, their sources unchanged and only
# the include path different: compat/ comes first, so their `#include "mshadow/tensor.h"` finds
# compat/mshadow/tensor.h, which is <tensorexpr/mshadow.h>.
#   bash tools/mshadow-random-tests.sh MSHADOW_DIR [cpu] [gpu]       (default: cpu, and gpu when nvcc is found)
# MSHADOW_DIR is mshadow's source tree (or MXNet's 3rdparty/mshadow): its test/test_random.h,
# test_random_cpu.cc and test_random_gpu.cu are copied to a scratch directory (BUILD_DIR, default a fresh
# temporary one) and built there without NDEBUG, since they check with assert. Each run must end with
# "All checks passed". The GPU program needs a GPU to run; CUDA_ARCH (default 90) picks the one compiled for.
# Memory: mshadow's CheckSampleUniformReal never frees the host copies of its 600 tensors of 10^7 elements,
# so each program holds about 28 GB of host memory by its end (use a machine with 32 GB or more).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: tools/mshadow-random-tests.sh MSHADOW_DIR [cpu] [gpu]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(cpu)
  command -v nvcc >/dev/null && targets+=(gpu)
fi
for f in test_random.h test_random_cpu.cc test_random_gpu.cu; do
  [ -f "$src/test/$f" ] || { echo "$src/test/$f: not found (MSHADOW_DIR must hold mshadow's test/)"; exit 1; }
done
build=${BUILD_DIR:-$(mktemp -d)}
mkdir -p "$build/test"
cp "$src"/test/test_random.h "$src"/test/test_random_cpu.cc "$src"/test/test_random_gpu.cu "$build/test/"
includes=(-I"$root/compat" -I"$root/include")
status=0
for target in "${targets[@]}"; do
  case $target in
    cpu)
      echo "== g++ test_random_cpu.cc"
      g++ -std=c++17 -O2 -pthread "${includes[@]}" "$build/test/test_random_cpu.cc" -o "$build/test_random_cpu"
      "$build/test_random_cpu" || status=1
      ;;
    gpu)
      echo "== nvcc test_random_gpu.cu"
      nvcc -std=c++17 --expt-relaxed-constexpr -O2 -arch=sm_${CUDA_ARCH:-90} -Xcompiler -fopenmp "${includes[@]}" \
        "$build/test/test_random_gpu.cu" -o "$build/test_random_gpu" -lcublas -lcurand -lopenblas
      "$build/test_random_gpu" || status=1
      ;;
    *) echo "unknown target $target (cpu or gpu)"; exit 1 ;;
  esac
done
exit $status
