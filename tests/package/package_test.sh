#!/usr/bin/env bash
# package_test: builds the cellgate .deb (cpack -G DEB), installs it with apt-get (which resolves its
# Depends), checks the unit (systemd-analyze verify), starts /usr/bin/cellgate serve from it as the
# unit would, runs a kernel of each installed kernelspec through REST and the WebSocket, stops it,
# purges the package and checks that nothing of it is left.
# usage: package_test.sh BUILD_DIR SOURCE_DIR. Exits 77 (skipped) where cellgate is already
# installed: this test removes the package, and must not remove someone's.
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
here="$src/tests/package"
out="$build/package-test"
tag="pkgtest-$$"
runtime="/run/cellgate-$tag"
unit=/lib/systemd/system/cellgate.service
apt_opts=(-y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends)
gw_pid=""

say() { echo "package_test: $*"; }
fail() { echo "package_test: FAIL: $*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' cellgate 2>/dev/null | grep -q "ok installed"; then
  say "a cellgate package is already installed on this host; not touching it (skipped)"
  exit 77
fi

cleanup() {
  local rc=$?
  if [ -n "$gw_pid" ] && kill -0 "$gw_pid" 2>/dev/null; then kill -TERM "$gw_pid" 2>/dev/null || true; wait "$gw_pid" || true; fi
  if dpkg-query -W -f='${Status}' cellgate 2>/dev/null | grep -q installed; then
    DEBIAN_FRONTEND=noninteractive apt-get purge "${apt_opts[@]}" cellgate >/dev/null 2>&1 || true
  fi
  rm -rf "$runtime"
  if [ $rc -ne 0 ] && [ -f "$out/gateway.log" ]; then echo "--- gateway log"; tail -n 50 "$out/gateway.log"; fi
  exit $rc
}
trap cleanup EXIT

# 1. Build the package from this build tree.
rm -rf "$out" && mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$out"/cellgate_*.deb)
say "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb -f "$deb" Depends | grep -q "libzmq5" || fail "Depends lacks the shared libraries (dpkg-shlibdeps did not run)"

# 2. Install it as a user would: apt resolves its Depends.
(cd "$out" && DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" ./"$(basename "$deb")") \
  >"$out/install.log" 2>&1 || { cat "$out/install.log"; fail "apt-get install ./$(basename "$deb")"; }
dpkg -L cellgate | sort > "$out/files.txt"
for f in /usr/bin/cellgate /usr/bin/cellgate-jail /usr/bin/cellgate-zygote /usr/lib/cellgate/cellgate-xpython \
         /usr/share/jupyter/kernels/xpython/kernel.json "$unit" /etc/cellgate/cellgate.json; do
  [ -e "$f" ] || fail "$f not installed"
done
dpkg-query -W -f='${Conffiles}\n' cellgate | grep -q "/etc/cellgate/cellgate.json" || fail "cellgate.json is not a conffile"
[ "$(stat -c %a /var/lib/cellgate)" = 700 ] || fail "/var/lib/cellgate is not mode 0700"
[ ! -e /var/lib/cellgate/token ] || fail "a token exists before the first start"

# 3. The unit file: systemd's own checks (syntax, that ExecStart exists and is executable).
if ! systemd-analyze verify --man=no "$unit" >"$out/verify.log" 2>&1; then
  cat "$out/verify.log"; fail "systemd-analyze verify $unit"
fi
grep -v "^$" "$out/verify.log" || true
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")

# 4. Start it. With systemd as PID 1 that is the unit itself; otherwise (containers, this CI)
#    ExecStart under the unit's capability bounding set, no_new_privs and file system view.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A developer's or CI's /usr/local/share/jupyter/kernels/xpython (scripts/install-xpython.sh) would
# shadow the package's; the packaged kernelspecs are searched first so that theirs is the one run.
export CELLGATE_PORT=$port CELLGATE_RUNTIME_DIR=$runtime CELLGATE_KERNELSPEC_DIR=/usr/share/jupyter/kernels
if [ -d /run/systemd/system ]; then
  mkdir -p /run/systemd/system/cellgate.service.d
  printf '[Service]\nEnvironment=CELLGATE_PORT=%s CELLGATE_RUNTIME_DIR=%s CELLGATE_KERNELSPEC_DIR=%s\nReadWritePaths=%s\n' \
    "$port" "$runtime" "$CELLGATE_KERNELSPEC_DIR" "$runtime" \
    > /run/systemd/system/cellgate.service.d/test.conf
  systemctl daemon-reload && systemctl restart cellgate.service
else
  say "systemd is not PID 1 here ($(ps -p 1 -o comm=)): running ExecStart as the unit would"
  setsid "$here/as_unit.sh" "$unit" "$runtime" -- "$exec_start" >"$out/gateway.out" 2>"$out/gateway.log" &
  gw_pid=$!
fi
url="http://127.0.0.1:$port"
for _ in $(seq 1 300); do
  [ -s /var/lib/cellgate/token ] && curl -sf -o /dev/null -H "Authorization: token $(cat /var/lib/cellgate/token)" "$url/api" && break
  [ -z "$gw_pid" ] || kill -0 "$gw_pid" 2>/dev/null || fail "the gateway exited"
  sleep 0.2
done
token=$(cat /var/lib/cellgate/token)
curl -sf -o /dev/null -H "Authorization: token $token" "$url/api" || fail "the gateway did not answer on $url"
[ "$(stat -c '%a %U' /var/lib/cellgate/token)" = "600 root" ] || fail "the token file is not 0600 root"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/api/kernels")" = 401 ] || fail "no token: not 401"
if [ -n "$gw_pid" ]; then  # the emulation took: the unit's no_new_privs and bounding set
  grep -q "^NoNewPrivs:[[:space:]]*1" "/proc/$gw_pid/status" || fail "the gateway runs without no_new_privs"
  bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' "/proc/$gw_pid/status")
  (( (0x$bnd >> 16) & 1 )) && fail "the gateway's bounding set has CAP_SYS_MODULE ($bnd)"
fi
say "serving at $url (token in /var/lib/cellgate/token, $(stat -c %a /var/lib/cellgate/token))"

# 5. One kernel of each kernelspec, REST and WebSocket, then deleted.
PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$here/roundtrip.py" "$url" "$token" python3 xpython | tee "$out/roundtrip.log"
for kid in $(grep -E '^[0-9a-f-]{36}$' "$out/roundtrip.log"); do
  if find /sys/fs/cgroup -maxdepth 4 -name "$kid*" 2>/dev/null | grep -q .; then fail "kernel $kid left a cgroup"; fi
  [ ! -e "$runtime/k/$kid" ] || fail "kernel $kid left its ipc dir"
done

# 6. Stop it as systemd would (SIGTERM to the main process) and purge the package.
if [ -n "$gw_pid" ]; then
  kill -TERM "$gw_pid"
  for _ in $(seq 1 150); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$gw_pid" 2>/dev/null && fail "the gateway did not stop within 30 s of SIGTERM"
  wait "$gw_pid" || true
  gw_pid=""
else
  systemctl stop cellgate.service
  rm -rf /run/systemd/system/cellgate.service.d && systemctl daemon-reload
fi
DEBIAN_FRONTEND=noninteractive apt-get purge "${apt_opts[@]}" cellgate >"$out/purge.log" 2>&1 \
  || { cat "$out/purge.log"; fail "apt-get purge cellgate"; }

# 7. Nothing left: none of its files, dirs, state, service links, processes or listening port.
left=()
while read -r f; do
  [ -e "$f" ] || continue
  case "$f" in /.|/etc|/lib|/lib/systemd|/lib/systemd/system|/usr|/usr/bin|/usr/lib|/usr/share|/usr/share/doc|/usr/share/jupyter|/usr/share/jupyter/kernels) ;;
    *) left+=("$f") ;;
  esac
done < "$out/files.txt"
for p in /etc/cellgate /var/lib/cellgate /var/cache/cellgate /usr/lib/cellgate /usr/share/doc/cellgate \
         /etc/systemd/system/multi-user.target.wants/cellgate.service \
         /var/lib/systemd/deb-systemd-helper-enabled/cellgate.service.dsh-also \
         /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/cellgate.service; do
  [ -e "$p" ] && left+=("$p")
done
[ ${#left[@]} -eq 0 ] || fail "left behind after purge: ${left[*]}"
if pgrep -f "^/usr/bin/cellgate" >/dev/null || pgrep -f "^/usr/lib/cellgate/" >/dev/null; then
  fail "processes of the package still run: $(pgrep -af '^/usr/(bin|lib)/cellgate')"
fi
curl -s -o /dev/null "$url/api" && fail "something still listens on $url"
say "installed, served two kernels, stopped and purged without a trace"
