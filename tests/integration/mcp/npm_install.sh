#!/usr/bin/env bash
# npm_install: installs the official MCP TypeScript SDK into the build tree once (skipped when present).
# usage: npm_install.sh CLIENT_DIR
set -euo pipefail
dir=$1
if [ -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
  echo "MCP SDK already installed in $dir"
  exit 0
fi
command -v npm >/dev/null || { echo "npm_install: npm not found (Debian package npm)" >&2; exit 1; }
mkdir -p "$dir"
if ! npm install --prefix "$dir" --no-audit --no-fund @modelcontextprotocol/sdk; then
  echo "npm_install: could not install @modelcontextprotocol/sdk from the npm registry (offline?);" \
       "the MCP end-to-end tests need it" >&2
  exit 1
fi
