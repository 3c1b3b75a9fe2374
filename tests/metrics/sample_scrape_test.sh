#!/usr/bin/env bash
# sample_scrape_test: a real Prometheus scrapes metrics_sample's exposition and answers queries on
# it (a gauge by labels, a histogram quantile); with a wrong token the target is down.
# usage: sample_scrape_test.sh METRICS_SAMPLE
set -euo pipefail
here=$(dirname "$(realpath "$0")")
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
out=$(mktemp)
/usr/bin/python3 "$here/sample_exporter.py" "$1" "$token" >"$out" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 1 50); do [ -s "$out" ] && break; sleep 0.1; done
target="127.0.0.1:$(cat "$out")"
"$here/prometheus_scrape.sh" "$target" /metrics "$token" \
  'cellgate_kernels{kernelspec="xpython",state="paused"}' '^1$' \
  'histogram_quantile(0.5, cellgate_kernel_start_seconds_bucket{path="cold"})' '^0\.75$'
if "$here/prometheus_scrape.sh" "$target" /metrics "not-$token" up '^1$' 2>/dev/null; then
  echo "sample_scrape_test: a wrong token was scraped" >&2
  exit 1
fi
echo "sample_scrape_test: 2 passed, 0 failed"
