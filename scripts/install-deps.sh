#!/usr/bin/env bash
# Installs the Debian 12 packages wit needs to build, test and run its demo.
# Only missing packages are installed; uses sudo when not root. Prints one
# line per phase; apt's own output goes to a log file (shown when apt fails),
# or to the terminal with -v.
set -euo pipefail

verbose=0
case "${1:-}" in
  -v | --verbose) verbose=1 ;;
  "") ;;
  *) echo "usage: scripts/install-deps.sh [-v]" >&2; exit 2 ;;
esac

pkgs=(
  build-essential cmake pkg-config ccache git
  libsodium-dev libzstd-dev libxxhash-dev nlohmann-json3-dev libcli11-dev catch2 libsimdjson-dev
  libtorch-dev libgloo-dev libopenblas0-pthread
  fortunes groff-base jq time python3 python3-cryptography
  python3-torch
  chromium
  clang libclang-rt-14-dev
)
# Optional extras asked for by name: WIT_EXTRA_PKGS="gdb valgrind" scripts/install-deps.sh
# shellcheck disable=SC2206
pkgs+=(${WIT_EXTRA_PKGS:-})

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: error: need root or sudo to install: ${missing[*]}" >&2; exit 2; }
  sudo="sudo"
fi
log=$(mktemp "${TMPDIR:-/tmp}/wit-install-deps.XXXXXX.log")
# phase WHAT CMD...: one line saying WHAT, CMD's output in the log (or on the terminal with -v).
phase() {
  local what=$1
  shift
  echo "install-deps: $what" >&2
  if [ "$verbose" -eq 1 ]; then
    "$@" >&2
  elif ! "$@" >>"$log" 2>&1; then
    echo "install-deps: error: $what failed; the last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 2
  fi
}
phase "updating the package lists" $sudo apt-get update -qq
phase "installing ${missing[*]}" \
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done (apt's output: $log)" >&2
