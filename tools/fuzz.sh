#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with Debian's clang under ASan + UBSan (no recovery, plus
# float-cast-overflow) and runs each for a time budget over its checked-in seed corpus fuzz/corpus/<name>/
# (new inputs go to build-fuzz/<name>/corpus; the checked-in seeds are only read). Ends with one line
# per harness, "fuzz <name>: ok, ..." or "fuzz <name>: FAILED ...", and exits non-zero if any failed.
#   tools/fuzz.sh [seconds-per-harness] [harness...]     (default 30 s each, every fuzz/*_fuzz.cc)
#   FUZZ_JOBS=N: harnesses built and fuzzed at once (default: the cores)
# A failure leaves its input in build-fuzz/<name>/crash-* (or leak-*, oom-*, timeout-*); replay it with
#   build-fuzz/<name>/<name> FILE          (TE_FUZZ_TRACE=1 prints each case; see fuzz/fuzz_util.h)
# OMP_NUM_THREADS / OPENBLAS_NUM_THREADS default to 1 here (many tiny runs; set them to fuzz threaded).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ensure-packages.sh
# clang, its runtimes (libFuzzer and the sanitizers are in libclang-rt-*-dev) and LLVM's OpenMP.
ensure_packages clang libclang-rt-dev libomp-dev libopenblas-dev zlib1g-dev pkgconf

secs=${1:-30}
shift $(( $# > 0 ? 1 : 0 ))
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cc; do names+=("$(basename "$f" .cc)"); done
fi
out=build-fuzz
mkdir -p "$out"

flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -fsanitize=float-cast-overflow -Iinclude)
# The library runs serially without OpenMP; use it when clang can link it.
echo 'int main() { return 0; }' >"$out/omp_check.cc"
clang++ -fopenmp "$out/omp_check.cc" -o "$out/omp_check" 2>/dev/null && flags+=(-fopenmp)
libs=($(pkg-config --cflags --libs openblas) -lz)

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
export UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
# Each harness runs on one thread: build them, then fuzz, as many at a time as there are cores (CI has 2),
# or FUZZ_JOBS.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done; }

build_one() {
  local name=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "fuzz/corpus/$name"
  # The convolution harnesses need the operator library's compiled parts, built with the same flags.
  local extra=()
  [[ $name == conv_* ]] && extra=(ops/conv_select.cc ops/conv_workspace.cc)
  rm -f "$dir/$name" "$dir/result"
  clang++ "${flags[@]}" "fuzz/$name.cc" "${extra[@]}" -o "$dir/$name" "${libs[@]}" >"$dir/build.log" 2>&1 ||
    echo "fuzz $name: FAILED (does not build)" >"$dir/result"
}

run_one() {
  local name=$1 dir=$out/$1
  rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/oom-* "$dir"/timeout-*
  "$dir/$name" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "$dir/corpus" "fuzz/corpus/$name" >"$dir/log" 2>&1
  local rc=$? runs artifact
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$dir/log" | grep -oE '[0-9]+$' || echo 0)
  artifact=$(ls "$dir"/crash-* "$dir"/leak-* "$dir"/oom-* "$dir"/timeout-* 2>/dev/null | head -1)
  if [ "$rc" = 0 ] && [ -z "$artifact" ]; then
    echo "fuzz $name: ok, ${runs:-0} runs in $secs s" >"$dir/result"
  else
    echo "fuzz $name: FAILED (exit $rc) after ${runs:-0} runs; input: ${artifact:-none}, log: $dir/log" >"$dir/result"
  fi
}

for name in "${names[@]}"; do
  echo "== fuzz $name: building"
  throttle
  build_one "$name" &
done
wait
for name in "${names[@]}"; do
  [ -f "$out/$name/result" ] && { cat "$out/$name/build.log"; continue; }
  echo "== fuzz $name: running for $secs s"
  throttle
  run_one "$name" &
done
wait
results=() failed=0
for name in "${names[@]}"; do
  line=$(cat "$out/$name/result" 2>/dev/null || echo "fuzz $name: FAILED (no result)")
  if [[ $line == *FAILED* ]]; then
    [ -f "$out/$name/log" ] && grep -vE '^#[0-9]+|^INFO:|NEW_FUNC' "$out/$name/log" | tail -40
    failed=$((failed + 1))
  fi
  results+=("$line")
done
printf '%s\n' "${results[@]}"
[ "$failed" = 0 ]
