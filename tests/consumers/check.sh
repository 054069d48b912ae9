#!/usr/bin/env bash
# Installs the build into a temporary root (meson install --destdir, nothing rebuilt) and builds programs
# against it as other projects would: pkg-config with g++ -std=c++17 and -std=c++20, CMake's
# find_package(tensorexpr), and nvcc with `pkg-config tensorexpr-cuda` when the CUDA backend was built.
# Then a Meson project with this source tree as its subproject (which builds the operator library itself).
# Each program runs and checks its result. Usage: check.sh <build dir> <source dir of tests/consumers>
set -euo pipefail
build=$1 here=$2
# A pkg-config that prefixes every path with $PKG_CONFIG_SYSROOT_DIR (a cross or bundled setup) gets the
# temporary root inside that sysroot, named in our .pc files relative to it.
sysroot=${PKG_CONFIG_SYSROOT_DIR:-}
work=$(mktemp -d ${sysroot:+-p "$sysroot"})
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --destdir "$work/root" --no-rebuild --quiet >/dev/null
read -r prefix libdir < <(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys; o = {x["name"]: x["value"] for x in json.load(sys.stdin)}; print(o["prefix"], o["libdir"])')
root=$work/root$prefix
# Our .pc files name the configured prefix: point them at the temporary root (openblas's stay as they are).
sed -i "s|^prefix=.*|prefix=${root#"$sysroot"}|" "$root/$libdir"/pkgconfig/tensorexpr*.pc
export PKG_CONFIG_PATH=$root/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
for std in c++17 c++20; do
  # shellcheck disable=SC2046
  g++ -std=$std -O1 "$here/app.cpp" $(pkg-config --cflags --libs tensorexpr) -o "$work/app_$std"
  "$work/app_$std"
  echo "pkg-config consumer ($std): ok"
done
# The template implementation compiles from the installed tree: every <tensorexpr/ops/impl/...> header in one
# translation unit, so a file they include that the install leaves out fails here (CUTLASS's glue needs nvcc).
for h in "$root"/include/tensorexpr/ops/impl/*.h; do
  [ "$(basename "$h")" = conv_cutlass.h ] || echo "#include <tensorexpr/ops/impl/$(basename "$h")>"
done >"$work/impl.cpp"
# shellcheck disable=SC2046
g++ -std=c++17 -fsyntax-only "$work/impl.cpp" $(pkg-config --cflags tensorexpr)
echo "installed implementation headers ($(grep -c include "$work/impl.cpp")): ok"
# The one name 'tensorexpr' carries the operator library; 'tensorexpr-ops' is the same by its older name.
[ "$(pkg-config --libs tensorexpr)" = "$(pkg-config --libs tensorexpr-ops)" ]
if command -v cmake >/dev/null; then
  cmake -S "$here/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work/cmake-build" >/dev/null
  "$work/cmake-build/app"
  echo "CMake consumer: ok"
else
  echo "CMake consumer: skipped (no cmake)"
fi
if pkg-config --exists tensorexpr-cuda && command -v nvcc >/dev/null; then
  # shellcheck disable=SC2046
  nvcc -std=c++17 --expt-relaxed-constexpr "$here/app.cu" $(pkg-config --cflags --libs tensorexpr-cuda) -o "$work/app_cu"
  "$work/app_cu"
  echo "nvcc consumer: ok"
fi
# Meson subproject: dependency('tensorexpr') in a C++20 parent project. Without a GPU only the CPU program
# is built; where nvcc is, the parent also resolves dependency('tensorexpr-cuda') (configured, not built:
# building the GPU operator libraries again would take as long as this build did).
source=$(cd "$here/../.." && pwd)
mkdir -p "$work/meson-consumer/subprojects"
cp "$here/meson/meson.build" "$here/meson/meson_options.txt" "$here/app.cpp" "$here/app.cu" "$work/meson-consumer/"
ln -s "$source" "$work/meson-consumer/subprojects/tensorexpr"
gpu=false
command -v nvcc >/dev/null && gpu=true
# --force-fallback-for: the subproject, not the temporary install that PKG_CONFIG_PATH shows above.
# Unoptimised: this checks that the subproject resolves and links, and -O0 builds its operator library in
# 41 s instead of 142 s (2-core machine).
meson setup "$work/meson-consumer/build" "$work/meson-consumer" -Dgpu=$gpu \
  --force-fallback-for=tensorexpr,tensorexpr-cuda -Doptimization=0 -Dtensorexpr:optimization=0 \
  -Dtensorexpr:cuda=$([ $gpu = true ] && echo enabled || echo disabled) >"$work/meson-setup.log" ||
  { cat "$work/meson-setup.log"; exit 1; }
ninja -C "$work/meson-consumer/build" app >/dev/null
"$work/meson-consumer/build/app"
echo "Meson subproject consumer: ok$([ $gpu = true ] && echo " (tensorexpr-cuda resolved, its program not built)")"
