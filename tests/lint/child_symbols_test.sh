#!/usr/bin/env bash
# child_symbols: the jail's child-world objects must stay async-signal-safe. `nm -u` on them must
# not show allocation, exceptions, stdio/syslog logging, locks, getenv/strerror or fork (which
# runs atfork handlers; the child uses _Fork). usage: child_symbols_test.sh OBJECT...
set -euo pipefail
[ "$#" -gt 0 ] || { echo "child_symbols: no objects given" >&2; exit 1; }
undefined=$(nm -u "$@" | awk 'NF == 2 { print $2 }' | sort -u)
# Sanity: the objects are the ones that exec the kernel, or this check proves nothing.
grep -qx 'execve' <<<"$undefined" || { echo "child_symbols: execve not referenced; wrong objects?" >&2; exit 1; }
forbidden='^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|_Znwm|_Znam|_ZnwmRKSt9nothrow_t|_ZdlPv|_ZdlPvm|_ZdaPv|__cxa_throw|__cxa_allocate_exception|__cxa_begin_catch|.*printf.*|puts|fputs|fwrite|syslog|vsyslog|pthread_mutex_lock|pthread_mutex_unlock|getenv|setenv|putenv|strerror|strerror_r|fork|opendir|readdir|exit|atexit)$'
bad=$(grep -E "$forbidden" <<<"$undefined" || true)
if [ -n "$bad" ]; then
  echo "child_symbols: forbidden symbols in the child world:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "child_symbols: $(wc -l <<<"$undefined") undefined symbols, none forbidden"
