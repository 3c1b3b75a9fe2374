#!/usr/bin/env bash
# Installs the built cellgate-xpython kernel under /usr/local (root, or sudo): the binary to
# /usr/local/lib/cellgate/cellgate-xpython and its kernelspec to
# /usr/local/share/jupyter/kernels/xpython/, which the gateway and jupyter_client search by default.
# Why /usr: cellgate-jail binds the host's /usr read-only into every jail (and not the build dir),
# so only a binary under /usr can run jailed. Usage: scripts/install-xpython.sh [BUILD_DIR [PREFIX]]
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
build=${1:-${CELLGATE_BUILD_DIR:-build}}
prefix=${2:-/usr/local}
src="$build/bin/cellgate-xpython"
[ -x "$src" ] || { echo "install-xpython: $src not built (run scripts/build.sh)" >&2; exit 1; }
bin="$prefix/lib/cellgate/cellgate-xpython"
spec="$prefix/share/jupyter/kernels/xpython"
# install(1) unlinks a busy destination (ETXTBSY) and writes a new file: running kernels keep theirs.
$SUDO install -D -m 0755 "$src" "$bin"
$SUDO install -d -m 0755 "$spec"
for logo in "$build"/share/jupyter/kernels/xpython/logo-*.png; do
  [ -e "$logo" ] && $SUDO install -m 0644 "$logo" "$spec/"
done
sed "s|@XPYTHON_BINARY@|$bin|" kernels/xpython/kernelspec/kernel.json.in |
  $SUDO install -m 0644 /dev/stdin "$spec/kernel.json"
echo "$bin"
echo "$spec/kernel.json"
