#!/usr/bin/env bash
# npm_install: installs npm packages into a client dir in the build tree, once (skipped when present).
# usage: npm_install.sh CLIENT_DIR PACKAGE...
set -euo pipefail
dir=$1
shift
missing=()
for pkg in "$@"; do
  [ -d "$dir/node_modules/$pkg" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "already installed in $dir: $*"
  exit 0
fi
command -v npm >/dev/null || { echo "npm_install: npm not found" >&2; exit 1; }
mkdir -p "$dir"
if ! npm install --prefix "$dir" --no-audit --no-fund "${missing[@]}"; then
  echo "npm_install: could not install ${missing[*]} from the npm registry (offline?);" \
       "the node client tests need them" >&2
  exit 1
fi
