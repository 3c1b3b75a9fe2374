# SPDX-License-Identifier: BSD-3-Clause
# processes_probe: subprocess, a shell pipeline, a pty (pexpect, what IPython's `!cmd` uses),
# multiprocessing.Pool and ProcessPoolExecutor work.
import concurrent.futures
import multiprocessing
import subprocess

from jailed import require_jail


def square(x):
    return x * x


if __name__ == "__main__":
    require_jail()
    out = subprocess.run(["/bin/sh", "-c", "echo hello | tr a-z A-Z"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "HELLO", out
    ls = subprocess.run(["ls", "/"], capture_output=True, text=True, check=True)
    print("ls /:", ls.stdout.split())
    import pexpect
    child = pexpect.spawn("/bin/sh", ["-c", "tty; echo pty-ok"], timeout=30)
    child.expect("pty-ok")
    print("pexpect:", child.before.decode().strip())
    with multiprocessing.Pool(2) as pool:
        assert pool.map(square, range(20)) == [x * x for x in range(20)]
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        assert list(ex.map(square, range(5))) == [0, 1, 4, 9, 16]
    print("PROCESSES OK", flush=True)
