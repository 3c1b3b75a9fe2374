#!/usr/bin/env bash
# as_unit: runs a command as cellgate.service would where systemd is not PID 1: the unit's
# capability bounding set and no_new_privs (setpriv, the same kernel calls systemd makes), and its
# file system view (ProtectSystem=strict, ProtectHome=yes, PrivateTmp=yes, the RW dirs) in a mount
# namespace of its own. Not emulated: the unit's seccomp filters (RestrictRealtime, LockPersonality,
# SystemCallArchitectures) and ProtectKernelModules.
# usage: as_unit.sh UNIT_FILE EXTRA_RW_DIR -- COMMAND...
set -euo pipefail
unit=$1 extra_rw=$2
shift 2
[ "$1" = -- ] && shift

value() { sed -n "s/^$1=//p" "$unit" | tail -n1; }

# CapabilityBoundingSet=~A B C: drop those. setpriv takes -cap_name,...
caps=$(value CapabilityBoundingSet)
bounding=()
if [ -n "$caps" ]; then
  [ "${caps:0:1}" = "~" ] || { echo "as_unit: only the ~ form of CapabilityBoundingSet is emulated" >&2; exit 2; }
  list=$(echo "${caps:1}" | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_/-/p' | paste -sd,)
  bounding=(--bounding-set "$list")
fi
nnp=()
[ "$(value NoNewPrivileges)" = yes ] && nnp=(--no-new-privs)

rw=(/var/lib/cellgate /var/cache/cellgate /run/cellgate /run/cellgate-root "$extra_rw")
[ "$(value ProtectSystem)" = strict ] || { echo "as_unit: expected ProtectSystem=strict" >&2; exit 2; }
[ "$(value ProtectHome)" = yes ] || { echo "as_unit: expected ProtectHome=yes" >&2; exit 2; }
[ "$(value PrivateTmp)" = yes ] || { echo "as_unit: expected PrivateTmp=yes" >&2; exit 2; }

# The mount namespace is private: nothing below reaches the host's mounts.
exec unshare --mount --propagation private -- bash -c '
  set -euo pipefail
  rw=("${@:1:5}"); shift 5
  for d in "${rw[@]}"; do mkdir -p "$d"; mount --bind "$d" "$d"; done
  # ProtectSystem=strict: every mount read-only but the API file systems and the RW dirs.
  findmnt -rn -o TARGET | sort -u | while read -r t; do
    t=$(printf "%b" "$t")
    case "$t" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac
    keep=0; for d in "${rw[@]}"; do [ "$t" = "$d" ] && keep=1; done
    [ $keep = 1 ] || mount -o remount,bind,ro "$t" 2>/dev/null || true
  done
  # ProtectHome=yes and PrivateTmp=yes.
  for h in /home /root /run/user; do [ -d "$h" ] && mount -t tmpfs -o ro,mode=0755 tmpfs "$h"; done
  mount -t tmpfs -o mode=1777 tmpfs /tmp
  mount -t tmpfs -o mode=1777 tmpfs /var/tmp
  exec "$@"
' as_unit "${rw[@]}" setpriv "${nnp[@]}" "${bounding[@]}" -- "$@"
