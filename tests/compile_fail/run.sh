#!/usr/bin/env bash
# Compile-fail checks: every *.cpp here is a misuse of the library that must NOT compile, and must fail
# with the static_assert sentence its first line names:
#     // expect: <a substring of the static_assert message>
# A snippet whose first line is `// expect-compile` is a control that must compile (it shows that the
# compiler, the flags and the include paths work, so the failures come from the misuse).
#
#   run.sh [--include DIR]... -- COMPILER [COMPILER ARGS...]
#
# Prints one line per snippet (PASS / FAIL and why) and exits non-zero when any check fails, including
# when a misuse compiles.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --include) flags+=("-I$2"); shift 2 ;;
    *) echo "run.sh: unknown argument '$1'"; exit 2 ;;
  esac
done
[ $# -gt 0 ] && shift  # the --
if [ $# -eq 0 ]; then
  echo "usage: run.sh [--include DIR]... -- COMPILER [COMPILER ARGS...]"
  exit 2
fi
cxx=("$@")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Compile every snippet (syntax and template instantiation only) in parallel, then judge in order.
snippets=("$here"/*.cpp)
for src in "${snippets[@]}"; do
  name=$(basename "$src" .cpp)
  ( "${cxx[@]}" -std=c++17 -fsyntax-only "${flags[@]}" "$src" >"$work/$name.log" 2>&1
    echo $? >"$work/$name.rc" ) &
done
wait

failed=0
for src in "${snippets[@]}"; do
  name=$(basename "$src" .cpp)
  first=$(head -n 1 "$src")
  rc=$(cat "$work/$name.rc")
  log="$work/$name.log"
  if [ "$first" = "// expect-compile" ]; then
    if [ "$rc" = 0 ]; then
      echo "PASS $name: compiles (control)"
    else
      echo "FAIL $name: the control does not compile:"
      head -n 30 "$log" | sed 's/^/    /'
      failed=1
    fi
    continue
  fi
  expect=${first#// expect: }
  if [ "$expect" = "$first" ] || [ -z "$expect" ]; then
    echo "FAIL $name: the first line must be '// expect: <static_assert substring>'"
    failed=1
  elif [ "$rc" = 0 ]; then
    echo "FAIL $name: compiled, but this misuse must be rejected with \"$expect\""
    failed=1
  elif grep -E 'static[_ ]assert' "$log" | grep -qF -- "$expect"; then
    echo "PASS $name: rejected with \"$expect\""
  else
    echo "FAIL $name: rejected, but without a static_assert saying \"$expect\"; the compiler said:"
    grep -E 'error' "$log" | head -n 10 | sed 's/^/    /'
    failed=1
  fi
done
exit $failed
