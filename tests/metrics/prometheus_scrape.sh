#!/usr/bin/env bash
# prometheus_scrape: starts Debian's prometheus (loopback, a fresh TSDB) scraping one target every
# second with a bearer token, waits until the target is up, then reads each QUERY back through
# Prometheus's HTTP API and prints its value; fails unless some sample matches its EXPECT (an ERE).
# usage: prometheus_scrape.sh HOST:PORT METRICS_PATH TOKEN [QUERY EXPECT]...
set -euo pipefail
target=$1 path=$2 token=$3
shift 3
command -v prometheus >/dev/null || { echo "prometheus_scrape: prometheus is not installed (apt-get install prometheus)" >&2; exit 1; }
work=$(mktemp -d /tmp/cellgate-prometheus.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
umask 077
printf '%s' "$token" > "$work/token"
cat > "$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cellgate
    metrics_path: $path
    authorization:
      type: Bearer
      credentials_file: $work/token
    static_configs:
      - targets: ['$target']
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$port" --log.level=warn >"$work/prometheus.log" 2>&1 &
pid=$!
api="http://127.0.0.1:$port/api/v1"
q() { curl -sf -G "$api/$1" "${@:2}"; }
health=""
for _ in $(seq 1 120); do
  kill -0 "$pid" 2>/dev/null || { cat "$work/prometheus.log" >&2; echo "prometheus_scrape: prometheus exited" >&2; exit 1; }
  health=$(q targets 2>/dev/null | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)["data"]["activeTargets"]; print(t[0]["health"], t[0]["lastError"]) if t else print("none")' 2>/dev/null || true)
  case "${health%% *}" in up | down) break ;; esac  # "unknown": not scraped yet
  sleep 0.5
done
[ "${health%% *}" = up ] || { echo "prometheus_scrape: target $target$path not up: $health" >&2; cat "$work/prometheus.log" >&2; exit 1; }
# The first scrape may not be queryable at once: ask until a sample is there.
while [ $# -ge 2 ]; do
  query=$1 expect=$2
  shift 2
  values=""
  for _ in $(seq 1 20); do
    values=$(q query --data-urlencode "query=$query" |
             /usr/bin/python3 -c 'import json,sys; [print(r["value"][1]) for r in json.load(sys.stdin)["data"]["result"]]')
    [ -n "$values" ] && break
    sleep 0.5
  done
  echo "prometheus_scrape: $query = ${values:-<no sample>}"
  grep -Eq "$expect" <<<"$values" || { echo "prometheus_scrape: expected $expect" >&2; exit 1; }
done
