#!/usr/bin/env bash
# What the lead runs on the GPU machine in one call (see DEVELOPERS notes): build with CUDA, run the GPU
# suite, compute-sanitizer memcheck over it and racecheck over the reductions, then the benchmarks.
#   STEPS="build test sanitize train seeds cputrain cpubench bench kernels families" bash tools/gpu-session.sh
# (seeds: SEEDS="42 1 2 3 4 5", one GPU against two at the same global batch; cputrain: CPU_ROUNDS=3
#  alternating runs of ours and PyTorch's; cpubench: the CPU conv layers; kernels: every CUTLASS kernel alone
#  per layer and pass; families: the expression-families tables, GPU against copy and PyTorch, CPU against
#  memcpy)
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
  # -k 0: a target that fails to build is reported, and the steps that need only the others still run.
  time ninja -C build-gpu -j16 -k 0 >"$out/build.log" 2>&1 || grep -E 'error|FAILED' "$out/build.log" | head -40
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
# One trainer run: fm LABEL ARGS... keeps its log in $out/fm_LABEL.log and prints the epoch lines.
fm() {
  local label=$1; shift
  "$@" 2>&1 | tr '\r' '\n' | grep -v '^epoch [0-9]*/[0-9]* *[0-9]*/' >"$out/fm_$label.log"
  echo "== $label: $*"; grep -E '^training|^epoch|^final|peer_fashion_mnist_(info|final)|rror' "$out/fm_$label.log"
}
if has train; then
  # The Fashion-MNIST trainer on the GPU: the default run and --bn (the README's targets), then the
  # PyTorch peer with the same settings. TRAIN_EXTRA="--augment --wd 5e-4" tries a recipe on all of them.
  fm gpu ./build-gpu/examples/fashion_mnist_gpu --device gpu --log "$out/fm_gpu.csv" --plot "$out/fm_gpu.svg" ${TRAIN_EXTRA:-}
  fm gpu_bn ./build-gpu/examples/fashion_mnist_gpu --device gpu --bn --log "$out/fm_gpu_bn.csv" ${TRAIN_EXTRA:-}
  fm peer_gpu python3 bench/fashion_mnist_peer.py --device cuda ${TRAIN_EXTRA:-}
fi
if has trainvariants; then
  # Recipe variants (the GPU is fast enough to try several in one session).
  fm gpu_wd ./build-gpu/examples/fashion_mnist_gpu --device gpu --wd 5e-4 --plot ''
  fm gpu_aug ./build-gpu/examples/fashion_mnist_gpu --device gpu --wd 5e-4 --augment --plot ''
  fm gpu_bn_wd ./build-gpu/examples/fashion_mnist_gpu --device gpu --bn --wd 5e-4 --plot ''
  fm gpu_bn_aug ./build-gpu/examples/fashion_mnist_gpu --device gpu --bn --wd 5e-4 --augment --plot ''
  fm gpu_bn_aug20 ./build-gpu/examples/fashion_mnist_gpu --device gpu --bn --wd 5e-4 --augment --epochs 20 --plot ''
fi
# The median of the numbers a sed expression pulls out of the given files' matching lines.
median() {
  local pattern=$1 expr=$2; shift 2
  grep -h "$pattern" "$@" | sed -E "$expr" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
if has seeds; then
  # Data parallel against one GPU at the same global batch, over several seeds (needs two GPUs): one GPU
  # with --batch 128, two with --batch 64 each; each run's final accuracy, then the means.
  for s in ${SEEDS:-42 1 2 3 4 5}; do
    fm one_s$s ./build-gpu/examples/fashion_mnist_gpu --batch 128 --seed "$s" --plot ''
    fm two_s$s ./build-gpu/examples/fashion_mnist_gpu --batch 64 --gpus 2 --seed "$s" --plot ''
  done
  for k in one two; do
    grep -h '^final' "$out"/fm_${k}_s*.log | awk -v k=$k '{s += $4; n++} END {printf "%s: mean %.4f over %d seeds\n", k, s / n, n}'
  done
fi
if has cputrain; then
  # One epoch on the host CPU, CPU_THREADS threads (16: the issue's comparison), ours then PyTorch's,
  # alternating for CPU_ROUNDS rounds: the host's speed drifts from run to run, so the medians are compared.
  # BUILD_DIR names another build of the trainer (the CPU one needs no CUDA); OPENBLAS_CORETYPE another core
  # (SkylakeX, AVX-512, unless set: Debian's OpenBLAS picks generic kernels on that host's CPU).
  t=${CPU_THREADS:-16} b=${BUILD_DIR:-build-gpu} core=${OPENBLAS_CORETYPE:-SkylakeX}
  for r in $(seq "${CPU_ROUNDS:-3}"); do
    fm cpu${t}_$r env OPENBLAS_CORETYPE=$core ./$b/examples/fashion_mnist --device cpu --threads $t --epochs 1 --plot ''
    fm peer_cpu${t}_$r python3 bench/fashion_mnist_peer.py --device cpu --threads $t --epochs 1
  done
  ours=$(median '^epoch 1/1' 's/.*time ([0-9.]+) s.*/\1/' "$out"/fm_cpu${t}_*.log)
  peer=$(median 'peer_fashion_mnist_final' 's/.*seconds_per_epoch=([0-9.]+).*/\1/' "$out"/fm_peer_cpu${t}_*.log)
  echo "cpu$t median epoch: ours $ours s, PyTorch $peer s, ratio $(awk "BEGIN {printf \"%.2f\", $ours / $peer}")"
  # Where our time goes (the first 300 batches, each layer call timed).
  fm profile_cpu$t env OPENBLAS_CORETYPE=$core ./$b/examples/fashion_mnist --device cpu --threads $t \
    --epochs 1 --limit 19200 --plot '' --profile
  grep -E '^  ' "$out/fm_profile_cpu$t.log"
fi
if has cpubench; then
  # Debian's OpenBLAS 0.3.21 does not know this host's CPU (it picks generic kernels): name the core.
  (cd bench && OPENBLAS_CORETYPE=SkylakeX ../build-gpu/bench/conv_cpu_bench --threads 16,2) 2>&1 \
    | tee "$out/conv_cpu_bench_skx.log" | grep -E 'OpenBLAS|total|conv_cpu_total'
fi
if has bench; then
  for b in build-gpu/bench/bandwidth build-gpu/bench/conv_bench; do
    [ -x "$b" ] && (cd bench && "../$b") 2>&1 | tee "$out/$(basename "$b").log" | tail -40
  done
fi
if has kernels; then
  # Which CUTLASS kernel is fastest where (the weight gradient's at its fastest split), fp16 and bf16.
  for d in fp16 bf16; do
    for p in fprop dgrad wgrad; do
      (cd bench && ../build-gpu/bench/cutlass_kernels --dtype $d --pass $p --reps 10) 2>&1 |
        tee "$out/cutlass_kernels_${d}_$p.log" | tail -1
    done
  done
fi
if has families; then
  (cd bench && ../build-gpu/bench/bandwidth --families) 2>&1 | tee "$out/families_gpu.log" | grep '^|'
  OPENBLAS_CORETYPE=SkylakeX ./build-gpu/bench/bandwidth_cpu --threads 16,2 2>&1 | tee "$out/families_cpu.log" |
    grep -E '^\||==='
fi
