#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages, build) and runs the gateway with
# embedded defaults: the python3 kernel, ./data as the data dir, and the URL with
# its token printed. Extra arguments go to `cellgate serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --runtime-only
scripts/seed-jail-caches.sh >/dev/null
scripts/build.sh -DCELLGATE_BUILD_TESTS=OFF -DCELLGATE_BUILD_BENCH=OFF
scripts/install-xpython.sh "${CELLGATE_BUILD_DIR:-build}" >/dev/null
exec "${CELLGATE_BUILD_DIR:-build}/bin/cellgate" serve --data-dir "${CELLGATE_DATA_DIR:-./data}" "$@"
