#!/usr/bin/env bash
# Our headers add no warnings to a user's strict build: programs that include them (the consumers, which
# include every public header, and the examples, the trainer among them) compile with -Werror under -Wall -Wextra -Wpedantic -Wshadow -Wconversion
# -Wsign-conversion, with g++ and, when present, clang++. Usage: check_warnings.sh <source root>
set -euo pipefail
root=$1
flags=(-std=c++17 -fopenmp -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror -fsyntax-only
       -I"$root/include" $(pkg-config --cflags openblas))
sources=(tests/consumers/app.cpp tests/consumers/strict.cpp tests/consumers/mshadow_strict.cpp examples/basic.cpp
         examples/defop.cpp examples/fashion_mnist/main.cpp)
for cxx in g++ clang++; do
  if ! command -v "$cxx" >/dev/null; then
    echo "$cxx: not installed, skipped"
    continue
  fi
  for src in "${sources[@]}"; do
    "$cxx" "${flags[@]}" "$root/$src"
  done
  echo "$cxx: ${#sources[@]} programs compile warning-free"
done
