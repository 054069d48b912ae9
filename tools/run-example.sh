#!/usr/bin/env bash
# The README's first command: installs what is missing (compilers, OpenBLAS, zlib, the Fashion-MNIST data
# set), builds the main example and runs it: the Fashion-MNIST convnet trainer, on the GPU when nvcc and a
# GPU are present (10 epochs), else on the CPU (2 epochs, ~2.5 minutes on 2 cores). Arguments go to the
# trainer (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ensure-packages.sh
source tools/ensure-cutlass.sh
ensure_packages meson ninja-build g++ pkgconf catch2 libopenblas-dev zlib1g-dev python3 dataset-fashion-mnist
ensure_cutlass
builddir=${BUILD_DIR:-build}
[ -d "$builddir/meson-private" ] || meson setup "$builddir"
trainer=examples/fashion_mnist
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
   ninja -C "$builddir" -t targets all | grep -q '^examples/fashion_mnist_gpu:'; then
  trainer=examples/fashion_mnist_gpu  # the same sources built by nvcc; it still trains on the CPU with --device cpu
fi
ninja -C "$builddir" "$trainer"
# The trainer writes its training curve beside itself in the build directory unless --plot says where:
# never into the source tree.
exec "$builddir/$trainer" "$@"
