#!/usr/bin/env bash
# The README's test command: installs the Debian packages that are missing (and, when nvcc is present,
# fetches CUTLASS's headers: tools/ensure-cutlass.sh), builds everything with Meson (the CUDA backend and
# the CUTLASS kernels too when nvcc is present), runs every test suite and ends with one line
# "N passed, N failed, N skipped" counted from the test runners' own results.
#   BUILD_DIR=build-x MESON_ARGS="-Db_sanitize=address,undefined" tools/test.sh   (other build flavours)
#   ONLY_CPU_SUITE=1 builds and runs just the [cpu] Catch2 suite (CI's sanitizer pass).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/ensure-packages.sh
source tools/ensure-cutlass.sh
ensure_packages meson ninja-build g++ pkgconf catch2 libopenblas-dev zlib1g-dev python3
[ -n "${ONLY_CPU_SUITE:-}" ] || ensure_cutlass
# The independent implementation the [onnx] cases compare against (tools/onnx_cases.py).
ensure_python_packages onnx onnxruntime

builddir=${BUILD_DIR:-build}
if [ -d "$builddir/meson-private" ]; then
  meson setup --reconfigure "$builddir" ${MESON_ARGS:-} >/dev/null || exit 1
else
  meson setup "$builddir" ${MESON_ARGS:-} || exit 1
fi
targets=""
[ -n "${ONLY_CPU_SUITE:-}" ] && targets="tests/tensorexpr_tests"
ninja -C "$builddir" $targets || { echo "0 passed, 1 failed"; exit 1; }
echo "== built in ${SECONDS} s"

passed=0 failed=0 skipped=0
log=$(mktemp)
# Catch2 suites: parse "All tests passed (A assertions in N test cases)" or "test cases: N | P passed | F failed".
run_catch() {
  local name=$1 bin=$2
  shift 2
  [ -x "$bin" ] || return 0
  echo "== $name: $bin $*"
  "$bin" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" = 77 ]; then
    local n
    n=$(grep -oE '[0-9]+ \[gpu\] test cases not run' "$log" | grep -oE '^[0-9]+' || echo 0)
    skipped=$((skipped + n))
  elif grep -qE '^All tests passed' "$log"; then
    passed=$((passed + $(grep -oE 'in [0-9]+ test case' "$log" | grep -oE '[0-9]+' | tail -1)))
  elif grep -qE '^test cases:' "$log"; then
    local line
    line=$(grep -E '^test cases:' "$log" | tail -1)
    passed=$((passed + $(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)))
    failed=$((failed + $(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || echo 0)))
  else
    echo "!! $name did not report a result (exit $rc)"
    failed=$((failed + 1))
  fi
  # Cases a binary left out for want of hardware (nccl_tests' worlds of several processes on one GPU).
  local absent
  absent=$(grep -oE '^skipped: [0-9]+ \[ranks\] test case' "$log" | grep -oE '[0-9]+' || true)
  skipped=$((skipped + ${absent:-0}))
  # Cases that found no ONNX oracle (tools/onnx_cases.py could not import onnx / onnxruntime) passed
  # vacuously: count them as skipped.
  local vacuous
  vacuous=$(grep -c 'skipped (ONNX oracle unavailable)' "$log" || true)
  passed=$((passed - vacuous))
  skipped=$((skipped + vacuous))
}
run_catch "cpu tests" "$builddir/tests/tensorexpr_tests" "[cpu]"
if [ -z "${ONLY_CPU_SUITE:-}" ]; then
run_catch "gpu tests" "$builddir/tests/gpu/tensorexpr_gpu_tests" "[gpu]"
run_catch "trainer tests" "$builddir/tests/trainer_tests" "[cpu]"
run_catch "distributed layer tests (host)" "$builddir/tests/dist/dist_tests" "[cpu]"
run_catch "distributed layer tests (NCCL)" "$builddir/tests/gpu/nccl_tests" "[gpu]"

# Every other registered Meson test (examples, compile-fail checks) counts as one test each.
meson test -C "$builddir" --list --no-rebuild 2>/dev/null | grep -vxE 'cpu|gpu|trainer|dist|nccl' >"$log.list" || true
while read -r t; do
  [ -n "$t" ] || continue
  if meson test -C "$builddir" --no-rebuild --print-errorlogs "$t" >"$log" 2>&1; then
    if grep -qE '^Skipped:\s+1' "$log"; then skipped=$((skipped + 1)); else passed=$((passed + 1)); fi
    echo "== $t: ok"
  else
    cat "$log"
    echo "== $t: FAILED"
    failed=$((failed + 1))
  fi
done <"$log.list"
rm -f "$log.list"
fi
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
