# SPDX-License-Identifier: BSD-3-Clause
# daemonize: leaves a daemon behind (setsid + double fork, stdio closed) that runs the sleeper probe
# with a marker, then waits. The test then kills the jail and checks the daemon died too.
# argv: SLEEPER_PATH PREFIX [exit]; the daemon's marker is PREFIX + "-daemon", so this script's own
# cmdline (which holds only PREFIX) never matches it. With `exit`, this script exits 0 once the
# daemon runs and a line arrives on stdin (the jail's command ends while a daemon lives on); waiting for
# that line lets the test see the daemon from the host before the jail ends and kills it.
import os
import sys
import time

sleeper, marker = sys.argv[1], sys.argv[2] + "-daemon"
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.execv(sleeper, [sleeper, marker])
os.waitpid(pid, 0)
for _ in range(200):
    seen = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    seen.append(p)
        except OSError:
            pass
    if seen:
        print(f"ready daemon={','.join(seen)} self={os.getpid()}", flush=True)
        break
    time.sleep(0.05)
if sys.argv[3:] == ["exit"]:
    sys.stdin.readline()
    sys.exit(0)
time.sleep(600)
