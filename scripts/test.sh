#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages, build) and runs every test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/seed-jail-caches.sh >/dev/null
scripts/build.sh -DCELLGATE_BUILD_TESTS=ON -DCELLGATE_BUILD_BENCH=ON
scripts/install-xpython.sh "${CELLGATE_BUILD_DIR:-build}" >/dev/null
cd "${CELLGATE_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
