# Source me (after tools/ensure-packages.sh): ensure_cutlass makes CUTLASS's headers findable when nvcc is
# present and Meson would find none. It downloads NVIDIA's nvidia-cutlass wheel from PyPI (pip download:
# nothing is installed into Python) and unpacks its headers under ~/.cache/tensorexpr, then exports
# CUTLASS_INCLUDE_DIR, which meson.build reads. Without nvcc, or when the download fails, the build goes on
# without the CUTLASS kernels (the other convolution algorithms cover every problem).
ensure_cutlass() {
  command -v nvcc >/dev/null 2>&1 || return 0
  [ -n "${CUTLASS_INCLUDE_DIR:-}" ] && [ -f "$CUTLASS_INCLUDE_DIR/cutlass/cutlass.h" ] && return 0
  python3 -c 'import cutlass_library' >/dev/null 2>&1 && return 0
  local version=4.2.0.0
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/tensorexpr/nvidia-cutlass-$version
  local include=$cache/cutlass_library/source/include
  if [ ! -f "$include/cutlass/cutlass.h" ]; then
    python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
    local tmp
    tmp=$(mktemp -d)
    echo "fetching CUTLASS headers (nvidia-cutlass $version from PyPI) into $cache"
    if ! python3 -m pip download -q --no-deps --only-binary :all: -d "$tmp" "nvidia-cutlass==$version"; then
      echo "could not download nvidia-cutlass: building without the CUTLASS convolution kernels"
      rm -rf "$tmp"
      return 0
    fi
    mkdir -p "$cache" && python3 -m zipfile -e "$tmp"/nvidia_cutlass-*.whl "$cache"
    rm -rf "$tmp"
  fi
  export CUTLASS_INCLUDE_DIR=$include
}
