#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages, build) and runs the gateway with
# embedded defaults: the python3 kernel, ./data as the data dir, and the URL with
# its token printed. Extra arguments go to `cellgate serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --runtime-only
scripts/seed-jail-caches.sh >/dev/null
# A fresh build dir leaves the tests out (their packages are not installed); one already configured
# keeps its options, so serving from a developer's tree never turns its test build off.
opts=()
[ -f "${CELLGATE_BUILD_DIR:-build}/CMakeCache.txt" ] || opts=(-DCELLGATE_BUILD_TESTS=OFF -DCELLGATE_BUILD_BENCH=OFF)
scripts/build.sh "${opts[@]}"
scripts/install-xpython.sh "${CELLGATE_BUILD_DIR:-build}" >/dev/null
exec "${CELLGATE_BUILD_DIR:-build}/bin/cellgate" serve --data-dir "${CELLGATE_DATA_DIR:-./data}" "$@"
