#!/usr/bin/env bash
# Pre-builds matplotlib's font list once on the host, for cellgate-jail to copy into each jailed
# kernel's MPLCONFIGDIR (the first `import matplotlib.pyplot` is then ~0.3 s faster). Re-run
# after upgrading matplotlib or fonts. Needs root. Uses Debian's /usr/bin/python3.
set -euo pipefail
dir=${1:-/var/cache/cellgate/matplotlib}
mkdir -p "$dir"
rm -f "$dir"/fontlist-*.json
MPLCONFIGDIR="$dir" /usr/bin/python3 -c 'import matplotlib.font_manager' 2>/dev/null
chmod 0755 "$dir"
chmod 0644 "$dir"/fontlist-*.json
ls "$dir"/fontlist-*.json
