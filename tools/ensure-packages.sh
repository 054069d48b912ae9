# Source me: ensure_packages PKG... installs the Debian packages that are not installed yet (as root, or
# through sudo when it is there), running `apt-get update` first only when something is missing.
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing missing packages: ${missing[*]}"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# ensure_python_packages MODULE... makes each Python module importable by python3: a missing one is
# installed from PyPI (the package of the same name, with its dependencies) into a folder of our own,
# ${XDG_CACHE_HOME:-~/.cache}/tensorexpr/python<major.minor>, never into the system's Python (Debian's is
# externally managed). tools/onnx_cases.py looks there too. Quiet when everything imports already; a
# failed install is reported and left to the callers (the ONNX oracle cases then skip, saying why).
python_packages_dir() {
  python3 -c 'import os, sys; print(os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
"tensorexpr", "python%d.%d" % sys.version_info[:2]))'
}
ensure_python_packages() {
  command -v python3 >/dev/null 2>&1 || return 0
  local dir missing=() m
  dir=$(python_packages_dir)
  for m in "$@"; do
    PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import $m" >/dev/null 2>&1 || missing+=("$m")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
  echo "installing Python packages into $dir: ${missing[*]}"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$dir" "${missing[@]}" ||
    echo "could not install ${missing[*]}: the ONNX oracle cases will be skipped"
}
