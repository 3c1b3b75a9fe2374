# SPDX-License-Identifier: Apache-2.0
# What a hostile test measures on the host (outside the kernel's cgroup), and how it starts a gateway
# whose options an older binary may not know (so the same test runs, and fails, against it).
import json
import os
import subprocess
import time

import targets as tm


def options(binary, **flags):
    """--name value pairs for the flags this binary knows; the others are reported and left out (an
    older binary then runs the attack with its own defaults, and the measurement shows what it let
    through)."""
    out = []
    for name, value in flags.items():
        flag = name.replace("_", "-")
        if tm.serve_knows(binary, flag):
            out += ["--" + flag, str(value)]
        else:
            print("note: this cellgate has no --%s; running without it" % flag)
    return out


def jailed(*extra, **flags):
    """A jailed `cellgate serve` target (not started) with **flags where the binary knows them."""
    t = tm.jail_target(*extra)
    t.extra_args += options(t.binary, **flags)
    return t


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """utime + stime of pid (and its reaped children), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / ticks


def shmem_kib():
    """The host's shared memory (tmpfs pages, /proc/meminfo Shmem)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


def allocated_bytes(path):
    """Bytes the files under path hold on their disks (st_blocks), without crossing into other mounts."""
    total = 0
    dev = os.lstat(path).st_dev
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(root, d)).st_dev == dev]
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def host_free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def jail_status(target, kernel_id):
    with open(os.path.join(target.run_dir, "s", kernel_id, "jail.json")) as f:
        return json.load(f)


def execute(target, kernel_id, code, timeout=120):
    """POST /execute; returns the JSON result (status, outputs...)."""
    r = target.post("api/kernels/%s/execute" % kernel_id, json={"code": code, "timeout": timeout}, timeout=timeout + 30)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


def stdout_of(result):
    return "".join(o.get("text", "") for o in result.get("outputs", []) if o.get("name") == "stdout")


def wait_until(fn, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)
