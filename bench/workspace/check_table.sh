#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs workspace_bench --quick; passes when it exits 0 and prints the header and 11 well-formed rows.
set -eu
out=$("$1" --quick)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -qx '| operation | seconds | vs cp -a |' || { echo "missing table header"; exit 1; }
rows=$(printf '%s\n' "$out" | grep -cE '^\| [^|]+ \| [0-9]+\.[0-9]{4} \| [0-9]+\.[0-9]{2}x \|$' || true)
[ "$rows" -eq 11 ] || { echo "expected 11 table rows, got $rows"; exit 1; }
