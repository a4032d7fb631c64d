# The one function the ensure scripts share (sourced by ensure-tools.sh and ensure-bench-tools.sh).
# ensure COMMAND-OR-FILE PACKAGE…
ensure() {
  local probe=$1
  shift
  if command -v "$probe" >/dev/null 2>&1 || [ -e "$probe" ]; then return 0; fi
  if command -v apt-get >/dev/null 2>&1; then
    install() { apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || sudo -n apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1; }
    update() { apt-get update >/dev/null 2>&1 || sudo -n apt-get update >/dev/null 2>&1; }
    echo "installing $* for the tests (apt-get install $*)"
    install "$@" || { update && install "$@"; } && return 0
  fi
  echo "$probe is missing and could not be installed: install Debian's $*"
}
