#!/usr/bin/env bash
# Old against new in one run, on one machine: builds the convolution benchmarks of this tree (build-gpu/)
# and of a baseline tree (BASE, a checkout of an earlier commit: `git archive <rev> | tar -x -C DIR`),
# then alternates them ROUNDS times and prints each run's totals (the lines ending in _total).
#   BASE=.gpu/baseline ROUNDS=3 bash tools/compare-baseline.sh [gpu] [cpu]
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .gpu/use-debs.sh ] && source .gpu/use-debs.sh
base=${BASE:?set BASE to the baseline tree}
rounds=${ROUNDS:-3}
what=${*:-gpu cpu}
targets=""
[[ " $what " == *" gpu "* ]] && targets+=" bench/conv_bench"
[[ " $what " == *" cpu "* ]] && targets+=" bench/conv_cpu_bench"
for tree in . "$base"; do
  ( cd "$tree" && { [ -d build-gpu ] || meson setup build-gpu -Dcuda=enabled -Dtests=false >/dev/null; } &&
    ninja -C build-gpu $targets >/dev/null ) || { echo "build failed in $tree"; exit 1; }
done
for r in $(seq "$rounds"); do
  for tree in "$base" .; do
    label=$([ "$tree" = . ] && echo new || echo old)
    if [[ " $what " == *" gpu "* ]]; then
      echo "round $r $label gpu: $("$tree"/build-gpu/bench/conv_bench --no-peer --no-3d 2>&1 | grep _total)"
    fi
    if [[ " $what " == *" cpu "* ]]; then
      "$tree"/build-gpu/bench/conv_cpu_bench --no-peer --threads 16,2 2>&1 | grep _total | sed "s/^/round $r $label cpu: /"
    fi
  done
done
