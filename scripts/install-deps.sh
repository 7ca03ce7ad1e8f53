#!/usr/bin/env bash
# Installs the Debian 12 packages wit needs to build, test and run its demo.
# Only missing packages are installed; uses sudo when not root.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config ccache git
  libsodium-dev libzstd-dev libxxhash-dev nlohmann-json3-dev libcli11-dev catch2
  libtorch-dev libgloo-dev libopenblas0-pthread
  fortunes groff-base jq
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
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
