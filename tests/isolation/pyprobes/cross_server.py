# SPDX-License-Identifier: BSD-3-Clause
# cross_server: kernel A of the cross-jail test publishes things another kernel might reach: an
# abstract unix socket, a loopback TCP port, files in /tmp and /dev/shm, a SysV shared memory
# segment, then waits. argv: TAG PORT
import ctypes
import os
import socket
import sys
import time

tag, port = sys.argv[1], int(sys.argv[2])
abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
abstract.bind("\0cellgate-cross-" + tag)
abstract.listen(4)
tcp = socket.socket()
tcp.bind(("127.0.0.1", port))
tcp.listen(4)
for d in ("/tmp", "/dev/shm", "/workspace"):
    try:
        with open(f"{d}/cross-{tag}", "w") as f:
            f.write("kernel A's data\n")
    except OSError as e:  # bare runs (the self-test) have no /workspace
        print(f"{d}: {e}", flush=True)
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0x5EC0DE, 4096, 0o1666)  # IPC_CREAT | 0666
print(f"ready shmid={shmid} pid={os.getpid()}", flush=True)
time.sleep(600)
