#!/usr/bin/env bash
# mcp_sdk_test: drives a gateway's MCP server with the official TypeScript SDK client over stdio
# (`cellgate mcp`) and streamable HTTP (/mcp). Runs under with_gateway.sh (CELLGATE_URL, CELLGATE_TOKEN).
# usage: mcp_sdk_test.sh CELLGATE_BINARY CLIENT_DIR SOURCE_DIR stdio|http|tools
set -euo pipefail
cellgate=$1 client_dir=$2 src=$3 mode=$4
[ -d "$client_dir/node_modules/@modelcontextprotocol/sdk" ] ||
  { echo "mcp_sdk_test: the MCP SDK is not installed in $client_dir (the integration.node.npm_install test failed)" >&2; exit 1; }
cp "$src/sdk_client.mjs" "$client_dir/"
if [ "$mode" != http ]; then
  exec node "$client_dir/sdk_client.mjs" "$mode" "$cellgate" "$CELLGATE_URL" "$CELLGATE_TOKEN"
fi
exec node "$client_dir/sdk_client.mjs" http "${CELLGATE_URL}mcp" "$CELLGATE_TOKEN"
