#!/usr/bin/env bash
# Old against new in one run, on one machine: builds the convolution benchmarks of this tree (build-gpu/)
# and of a baseline tree (BASE, a checkout of an earlier commit: `git archive <rev> | tar -x -C DIR`), then
#  - gpu: alternates the two conv_bench binaries ROUNDS times and prints each run's totals;
#  - cpu: for each round, thread count (THREADS, default "16 2") and layer (LAYERS), runs the two conv_cpu_bench
#    binaries one right after the other (which goes first alternates by round), each reporting the fastest of
#    REPS runs. A shared host's load comes and goes over seconds; timing the two builds seconds apart, layer
#    by layer, and keeping each layer's fastest time over the rounds leaves least of it in the comparison.
#    The summary sums those per-layer minima and prints new / old.
# The baseline is built with this tree's bench/conv_cpu_bench.cpp, so both sides are timed the same way.
#   BASE=.gpu/baseline ROUNDS=5 bash tools/compare-baseline.sh [gpu] [cpu]
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .gpu/use-debs.sh ] && source .gpu/use-debs.sh
base=${BASE:?set BASE to the baseline tree}
rounds=${ROUNDS:-3}
reps=${REPS:-10}
threads=${THREADS:-16 2}
layers=${LAYERS:-0 1 2 3 4}  # conv_cpu_bench's five layers
what=${*:-gpu cpu}
targets=""
[[ " $what " == *" gpu "* ]] && targets+=" bench/conv_bench"
[[ " $what " == *" cpu "* ]] && targets+=" bench/conv_cpu_bench" && cp bench/conv_cpu_bench.cpp "$base/bench/"
for tree in . "$base"; do
  ( cd "$tree" && { [ -d build-gpu ] || meson setup build-gpu -Dcuda=enabled -Dtests=false >/dev/null; } &&
    ninja -C build-gpu $targets >/dev/null ) || { echo "build failed in $tree"; exit 1; }
done
log=$(mktemp)
for r in $(seq "$rounds"); do
  order=$([ $((r % 2)) = 1 ] && echo "old new" || echo "new old")
  if [[ " $what " == *" gpu "* ]]; then
    for label in $order; do
      tree=$([ "$label" = new ] && echo . || echo "$base")
      echo "round $r $label gpu: $("$tree"/build-gpu/bench/conv_bench --no-peer --no-3d 2>&1 | grep _total)"
    done
  fi
  if [[ " $what " == *" cpu "* ]]; then
    for t in $threads; do
      for layer in $layers; do
        for label in $order; do
          tree=$([ "$label" = new ] && echo . || echo "$base")
          "$tree"/build-gpu/bench/conv_cpu_bench --no-peer --threads "$t" --layers "$layer" --stat min --reps "$reps" \
            2>&1 | grep '^conv_cpu_layer' | sed "s/^/round $r $label cpu: /" | tee -a "$log"
        done
      done
    done
  fi
done
if [[ " $what " == *" cpu "* ]]; then
  # Fields: round r label cpu: conv_cpu_layer threads T layer L fwd_ms F bwd_ms B
  awk -v threads_list="$threads" -v layer_list="$layers" '{ key = $7 " " $9; tree = $3
         if (!((tree, key) in f) || $11 < f[tree, key]) f[tree, key] = $11
         if (!((tree, key) in b) || $13 < b[tree, key]) b[tree, key] = $13
       }
       END { nt = split(threads_list, ts, " "); nl = split(layer_list, ls, " ")
             for (i = 1; i <= nt; ++i) {
               t = ts[i]; of = ob = nf = nb = 0
               for (j = 1; j <= nl; ++j) { k = t " " ls[j]
                 of += f["old", k]; ob += b["old", k]; nf += f["new", k]; nb += b["new", k]
                 printf "  %2s threads layer %s: fwd new/old %.3f  bwd new/old %.3f\n", t, ls[j], f["new", k] / f["old", k], b["new", k] / b["old", k] }
               printf "cpu %s threads, sum of per-layer minima: fwd old %.2f new %.2f ms (new/old %.3f)  bwd old %.2f new %.2f ms (new/old %.3f)\n",
                      t, of, nf, nf / of, ob, nb, nb / ob } }' "$log"
fi
rm -f "$log"
