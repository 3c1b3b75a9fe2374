# SPDX-License-Identifier: BSD-3-Clause
# jailed: the functional probes first check they really run inside a jail (so each can fail bare).
import os
import pwd
import socket
import sys


def require_jail():
    problems = []
    if os.getuid() != 1000 or pwd.getpwuid(os.getuid()).pw_name != "sandbox":
        problems.append(f"uid {os.getuid()} is not 1000/sandbox")
    if socket.gethostname() != "sandbox":
        problems.append(f"hostname {socket.gethostname()} is not sandbox")
    if os.getcwd() != "/workspace":
        problems.append(f"cwd {os.getcwd()} is not /workspace")
    if problems:
        print("NOT JAILED: " + "; ".join(problems), flush=True)
        sys.exit(3)
