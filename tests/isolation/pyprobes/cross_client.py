# SPDX-License-Identifier: BSD-3-Clause
# cross_client: kernel B of the cross-jail test tries to reach kernel A's socket, port, files and
# SysV segment; exit 77 when nothing of A is reachable. argv: TAG PORT A_HOST_PID
import ctypes
import os
import socket
import sys

tag, port, a_host_pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
escaped = []


def attempt(what, fn):
    try:
        fn()
        escaped.append(what)
        print(f"ESCAPED: {what}", flush=True)
    except OSError as e:
        print(f"held: {what}: {e.strerror or e}", flush=True)


def connect_abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0cellgate-cross-" + tag)


def connect_tcp():
    socket.create_connection(("127.0.0.1", port), timeout=3)


attempt("connect to A's abstract socket", connect_abstract)
attempt("connect to A's 127.0.0.1 port", connect_tcp)
for d in ("/tmp", "/dev/shm", "/workspace"):
    attempt(f"read A's {d} file", lambda d=d: open(f"{d}/cross-{tag}").read())
attempt("open A's /proc entry by host pid", lambda: open(f"/proc/{a_host_pid}/environ").read())
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0x5EC0DE, 0, 0)
if shmid >= 0:
    escaped.append("SysV shm")
    print(f"ESCAPED: A's SysV shm segment visible (id {shmid})", flush=True)
else:
    print(f"held: A's SysV shm segment: {os.strerror(ctypes.get_errno())}", flush=True)
sys.exit(1 if escaped else 77)
