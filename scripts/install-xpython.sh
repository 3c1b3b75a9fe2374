#!/usr/bin/env bash
# Installs the built cellgate-xpython kernel under /usr/local (needs root): the binary to
# /usr/local/lib/cellgate/cellgate-xpython and its kernelspec to
# /usr/local/share/jupyter/kernels/xpython/, which the gateway and jupyter_client search by default.
# Why /usr: cellgate-jail binds the host's /usr read-only into every jail (and not the build dir),
# so only a binary under /usr can run jailed. Usage: scripts/install-xpython.sh [BUILD_DIR [PREFIX]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-${CELLGATE_BUILD_DIR:-build}}
prefix=${2:-/usr/local}
src="$build/bin/cellgate-xpython"
[ -x "$src" ] || { echo "install-xpython: $src not built (run scripts/build.sh)" >&2; exit 1; }
bin="$prefix/lib/cellgate/cellgate-xpython"
spec="$prefix/share/jupyter/kernels/xpython"
# install(1) unlinks a busy destination (ETXTBSY) and writes a new file: running kernels keep theirs.
install -D -m 0755 "$src" "$bin"
install -d -m 0755 "$spec"
for logo in "$build"/share/jupyter/kernels/xpython/logo-*.png; do
  [ -e "$logo" ] && install -m 0644 "$logo" "$spec/"
done
sed "s|@XPYTHON_BINARY@|$bin|" kernels/xpython/kernelspec/kernel.json.in > "$spec/kernel.json.tmp"
chmod 0644 "$spec/kernel.json.tmp"
mv "$spec/kernel.json.tmp" "$spec/kernel.json"
echo "$bin"
echo "$spec/kernel.json"
