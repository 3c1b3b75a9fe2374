#!/usr/bin/env bash
# page_test.sh: dumps the embedded pages, serves them beside the gateway that with_gateway.sh
# started, and runs page_test.mjs in Chromium. usage: page_test.sh WEB_DUMP CLIENT_DIR SHOT_DIR
set -euo pipefail
dump_bin=$1 clients=$2 shots=$3
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d /tmp/cellgate-page-test.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
[ -x /usr/bin/chromium ] || { echo "page_test: /usr/bin/chromium is not installed (apt-get install chromium)" >&2; exit 1; }
[ -d "$clients/node_modules/playwright-core" ] || { echo "page_test: playwright-core is not installed in $clients" >&2; exit 1; }
"$dump_bin" "$work/assets"
/usr/bin/python3 "$here/page_server.py" "$work/assets" "$CELLGATE_URL" >"$work/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 1 50); do grep -q '^port ' "$work/server.out" && break; sleep 0.1; done
port=$(sed -n 's/^port //p' "$work/server.out")
[ -n "$port" ] || { cat "$work/server.out" >&2; exit 1; }
mkdir -p "$shots"
cd "$here"
PAGE_URL="http://127.0.0.1:$port/" SHOT_DIR="$shots" NODE_PATH="$clients/node_modules" node "$here/page_test.mjs"
