#!/usr/bin/env bash
# page_test.sh: runs page_test.mjs in Chromium against the pages that the gateway with_gateway.sh
# started serves itself (/, /admin). usage: page_test.sh CLIENT_DIR SHOT_DIR
set -euo pipefail
clients=$1 shots=$2
here=$(dirname "$(realpath "$0")")
[ -x /usr/bin/chromium ] || { echo "page_test: /usr/bin/chromium is not installed (apt-get install chromium)" >&2; exit 1; }
[ -d "$clients/node_modules/playwright-core" ] || { echo "page_test: playwright-core is not installed in $clients" >&2; exit 1; }
mkdir -p "$shots"
PAGE_URL="$CELLGATE_URL" SHOT_DIR="$shots" NODE_PATH="$clients/node_modules" node "$here/page_test.mjs"
