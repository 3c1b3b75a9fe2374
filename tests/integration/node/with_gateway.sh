#!/usr/bin/env bash
# with_gateway: starts `cellgate serve` (jailed kernels, 127.0.0.1, port 0, a fresh data dir), runs a
# command with CELLGATE_URL and CELLGATE_TOKEN in its environment, deletes the kernels it left and stops
# the gateway. Exits with the command's status; prints the gateway's log when the command failed.
# usage: with_gateway.sh CELLGATE_BINARY COMMAND [ARGS...]
set -euo pipefail
cellgate=$1
shift
work=$(mktemp -d /tmp/cellgate-node-test.XXXXXX)
server_pid=
CELLGATE_URL=
CELLGATE_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
cleanup() {
  # Kernels outlive a stopped gateway (it re-adopts them on restart), so delete them first.
  if [ -n "$server_pid" ] && [ -n "$CELLGATE_URL" ]; then
    for id in $(curl -s -m 10 -H "Authorization: token $CELLGATE_TOKEN" "${CELLGATE_URL}api/kernels" |
                grep -o '"id":"[0-9a-f-]*"' | cut -d'"' -f4); do
      curl -s -m 30 -o /dev/null -X DELETE -H "Authorization: token $CELLGATE_TOKEN" "${CELLGATE_URL}api/kernels/$id" || true
    done
  fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$cellgate" serve --ip 127.0.0.1 --port 0 --token "$CELLGATE_TOKEN" --data-dir "$work/data" \
  --runtime-dir "$work/run" --workspace-volume off >"$work/out.log" 2>"$work/err.log" &
server_pid=$!
for _ in $(seq 1 100); do
  CELLGATE_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$work/out.log" || true)
  [ -n "$CELLGATE_URL" ] && break
  kill -0 "$server_pid" 2>/dev/null || { echo "with_gateway: cellgate exited:" >&2; cat "$work/err.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$CELLGATE_URL" ] || { echo "with_gateway: cellgate did not print its URL" >&2; cat "$work/err.log" >&2; exit 1; }
export CELLGATE_URL CELLGATE_TOKEN
status=0
"$@" || status=$?
if [ "$status" -ne 0 ]; then echo "--- cellgate log ---" >&2; cat "$work/err.log" >&2; fi
exit "$status"
