#!/usr/bin/env bash
# mcp_sdk_test: starts `cellgate serve --spawner plain --port 0` and drives its MCP server with the official
# TypeScript SDK client over stdio (`cellgate mcp`) and streamable HTTP (/mcp).
# usage: mcp_sdk_test.sh CELLGATE_BINARY CLIENT_DIR SOURCE_DIR stdio|http|tools
set -euo pipefail
cellgate=$1 client_dir=$2 src=$3 mode=$4
[ -d "$client_dir/node_modules/@modelcontextprotocol/sdk" ] ||
  { echo "mcp_sdk_test: the MCP SDK is not installed in $client_dir (the integration.mcp.npm_install test failed)" >&2; exit 1; }
cp "$src/sdk_client.mjs" "$client_dir/"

work=$(mktemp -d /tmp/cellgate-mcp-test.XXXXXX)
server_pid=
url=
token=
cleanup() {
  # Kernels outlive a stopped gateway when it re-adopts them on restart, so delete them first.
  if [ -n "$server_pid" ] && [ -n "${url:-}" ]; then
    for id in $(curl -s -m 10 -H "Authorization: token $token" "${url}api/kernels" |
                grep -o '"id":"[0-9a-f-]*"' | cut -d'"' -f4); do
      curl -s -m 30 -o /dev/null -X DELETE -H "Authorization: token $token" "${url}api/kernels/$id" || true
    done
  fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$cellgate" serve --spawner plain --ip 127.0.0.1 --port 0 --token "$token" --data-dir "$work/data" \
  --runtime-dir "$work/run" >"$work/out.log" 2>"$work/err.log" &
server_pid=$!
url=
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$work/out.log" || true)
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { echo "mcp_sdk_test: cellgate exited:" >&2; cat "$work/err.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "mcp_sdk_test: cellgate did not print its URL" >&2; cat "$work/err.log" >&2; exit 1; }

status=0
if [ "$mode" != http ]; then
  node "$client_dir/sdk_client.mjs" "$mode" "$cellgate" "$url" "$token" || status=$?
else
  node "$client_dir/sdk_client.mjs" http "${url}mcp" "$token" || status=$?
fi
if [ "$status" -ne 0 ]; then echo "--- cellgate log ---" >&2; cat "$work/err.log" >&2; fi
exit "$status"
