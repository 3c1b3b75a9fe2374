#!/usr/bin/env bash
# gateway_scrape_test: Debian's Prometheus scrapes a real gateway's /metrics (run under
# with_gateway.sh: CELLGATE_URL, CELLGATE_TOKEN) after a kernel started, and reads back through its
# HTTP API the kernel's state and the start's latency count.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
H="Authorization: token $CELLGATE_TOKEN"
kid=$(curl -sf -H "$H" -X POST "${CELLGATE_URL}api/kernels" -d '{"name":"python3"}' |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
trap 'curl -s -o /dev/null -H "$H" -X DELETE "${CELLGATE_URL}api/kernels/$kid" || true' EXIT
hostport=$(sed -E 's#^https?://([^/]+)/.*#\1#' <<<"$CELLGATE_URL")
"$here/prometheus_scrape.sh" "$hostport" /metrics "$CELLGATE_TOKEN" \
  'sum(cellgate_kernels{kernelspec="python3",state=~"idle|busy"})' '^1$' \
  'sum(cellgate_kernel_start_seconds_count)' '^[1-9]' \
  'cellgate_build_info' '^1$'
echo "gateway_scrape_test: 1 passed, 0 failed"
