#!/usr/bin/env bash
# What the lead runs on the GPU machine in one call (see DEVELOPERS notes): build with CUDA, run the GPU
# suite, compute-sanitizer memcheck over it and racecheck over the reductions, then the benchmarks.
#   STEPS="build test sanitize bench" bash tools/gpu-session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .gpu/use-debs.sh ] && source .gpu/use-debs.sh
out=${OUT:-/tmp/te-out}
mkdir -p "$out"
steps=${STEPS:-build test sanitize bench}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
has() { [[ " $steps " == *" $1 "* ]]; }
if has build; then
  meson setup build-gpu -Dcuda=enabled >"$out/setup.log" 2>&1 || { tail -30 "$out/setup.log"; exit 1; }
  time ninja -C build-gpu -j16 >"$out/build.log" 2>&1 || { grep -E 'error|FAILED' "$out/build.log" | head -40; exit 1; }
fi
if has test; then
  ./build-gpu/tests/gpu/tensorexpr_gpu_tests "[gpu]" 2>&1 | tee "$out/gpu-tests.log" | tail -40
  ./build-gpu/tests/tensorexpr_tests "[cpu]" 2>&1 | tail -3
  for e in build-gpu/examples/*; do [ -x "$e" ] && [ -f "$e" ] && { echo "== $e"; "$e" | tail -3; }; done
fi
if has sanitize; then
  # The >2^31-element case moves 4 GiB per pass, and the out-of-memory case provokes the API error it
  # tests: both run in the plain suite, not under memcheck.
  timeout ${SANITIZE_TIMEOUT:-300} compute-sanitizer --tool memcheck --error-exitcode 1 \
    ./build-gpu/tests/gpu/tensorexpr_gpu_tests "[gpu]" "~A uint8 tensor of more than 2^31*" "~AllocSpace<gpu> out of memory*" \
    >"$out/memcheck.log" 2>&1; echo "memcheck exit $?"; tail -4 "$out/memcheck.log"
  compute-sanitizer --tool racecheck --error-exitcode 1 ./build-gpu/tests/gpu/tensorexpr_gpu_tests "[gpu][reduce]" \
    >"$out/racecheck.log" 2>&1; echo "racecheck exit $?"; tail -4 "$out/racecheck.log"
fi
if has train; then
  # The Fashion-MNIST trainer on the GPU (its default run), then the PyTorch peer with the same settings.
  ./build-gpu/examples/fashion_mnist_gpu --device gpu --log "$out/fm_gpu.csv" --plot "$out/fm_gpu.svg" 2>&1 \
    | tr '\r' '\n' | grep -v '^\s*\[' | tee "$out/fm_gpu.log" | tail -14
  ./build-gpu/examples/fashion_mnist_gpu --device gpu --bn --log "$out/fm_gpu_bn.csv" 2>&1 | tr '\r' '\n' \
    | grep -v '^\s*\[' | tail -3
  python3 bench/fashion_mnist_peer.py --device cuda 2>&1 | tee "$out/fm_peer.log" | tail -4
fi
if has cpubench; then
  # Debian's OpenBLAS 0.3.21 does not know this host's CPU (it picks generic kernels): name the core.
  (cd bench && OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=passive ../build-gpu/bench/conv_cpu_bench --threads 16,2) 2>&1 \
    | tee "$out/conv_cpu_bench_skx.log" | grep -E 'OpenBLAS|total|conv_cpu_total'
fi
if has bench; then
  for b in build-gpu/bench/bandwidth build-gpu/bench/conv_bench; do
    [ -x "$b" ] && (cd bench && "../$b") 2>&1 | tee "$out/$(basename "$b").log" | tail -40
  done
  (cd bench && ../build-gpu/bench/conv_cpu_bench --threads 16,2) 2>&1 | tee "$out/conv_cpu_bench.log" | tail -30
  (cd bench && OMP_WAIT_POLICY=passive ../build-gpu/bench/conv_cpu_bench --threads 16,2 --no-peer) 2>&1 \
    | tee "$out/conv_cpu_bench_passive.log" | grep conv_cpu_total
fi
