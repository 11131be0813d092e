#!/usr/bin/env bash
# System packages DynaDesk's tests and demo need on Debian/Ubuntu.
# As root on Debian: installs what is missing (idempotent, quiet when done).
# Otherwise: prints exactly what to install and exits 0 (make test then fails
# on the first test that needs a missing piece, naming it).
set -euo pipefail

PKGS=(
  # Docker engine for sandboxed evaluation, debootstrap for the offline image build
  docker.io debootstrap
  # Qt offscreen + a real window under Xvfb (screenshots), and a font so labels render
  libgl1 libegl1 libxcb1 libdbus-1-3 libfontconfig1 libfreetype6 libglib2.0-0 libxkbcommon0 fonts-dejavu-core
  libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0
  libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0 xvfb
  # the leaderboard page is tested in a real headless browser
  chromium
  # the server's PostgreSQL backend and the evaluation job queue's broker (tests start both themselves)
  postgresql redis-server
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "system_deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "system_deps: please install these system packages (as root):" >&2
  echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
fi
