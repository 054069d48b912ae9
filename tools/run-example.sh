#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the main example.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ensure-packages.sh
ensure_packages meson ninja-build g++ pkgconf catch2 libopenblas-dev zlib1g-dev python3
builddir=${BUILD_DIR:-build}
[ -d "$builddir/meson-private" ] || meson setup "$builddir"
ninja -C "$builddir" examples/basic
"$builddir/examples/basic" "$@"
