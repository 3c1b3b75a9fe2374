#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# quota_bench: the ways a live workspace quota can be had on this host, measured side by side:
#   one_volume           one btrfs image (fallocated, loop-mounted), a subvolume + simple-quota limit
#                        per workspace (what cellgate does: workspace/volume.h)
#   image_per_workspace  one ext4 image per workspace, each with its own loop device and mount
#   project_quota        XFS and ext4 project quotas in an image: only whether this kernel has them
# For N workspaces: the set-up cost, the cost per workspace, the mounts and loop devices they add,
# and the kernel memory they take (Slab + KernelStack + PageTables from /proc/meminfo: noisy on a
# shared host, so read it as an order of magnitude). Needs root. Usage: quota_bench.py [--workspaces N | --quick]
import argparse
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SUBVOL_CREATE = 0x5000940E   # BTRFS_IOC_SUBVOL_CREATE
QGROUP_LIMIT = 0x8030942B    # BTRFS_IOC_QGROUP_LIMIT
QUOTA_CTL = 0xC0109428       # BTRFS_IOC_QUOTA_CTL
WS_QUOTA = 64 << 20


def sh(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def meminfo_kib(*keys):
    vals = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            vals[k] = int(v.split()[0])
    return sum(vals[k] for k in keys)


def kernel_kib():
    return meminfo_kib("Slab", "KernelStack", "PageTables")


def mounts():
    with open("/proc/self/mountinfo") as f:
        return sum(1 for _ in f)


def loops():
    n = 0
    for name in os.listdir("/sys/block"):
        if name.startswith("loop") and os.path.exists("/sys/block/%s/loop/backing_file" % name):
            n += 1
    return n


def measure(setup, per_workspace, teardown, n):
    before = (kernel_kib(), mounts(), loops())
    t0 = time.monotonic()
    state = setup()
    t_setup = time.monotonic() - t0
    set_up = kernel_kib()
    times = []
    for i in range(n):
        t = time.monotonic()
        per_workspace(state, i)
        times.append(time.monotonic() - t)
    after = (kernel_kib(), mounts(), loops())
    teardown(state)
    times.sort()
    return {"setup_s": t_setup, "per_ws_ms_median": times[len(times) // 2] * 1000,
            "per_ws_ms_max": times[-1] * 1000, "mounts": after[1] - before[1], "loops": after[2] - before[2],
            "kernel_kib_setup": set_up - before[0], "kernel_kib_per_ws": (after[0] - set_up) / n}


def one_volume(tmp, n):
    def setup():
        img, mnt = os.path.join(tmp, "vol.img"), os.path.join(tmp, "vol")
        os.makedirs(mnt)
        with open(img, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, max(2 << 30, n * WS_QUOTA))
        sh("mkfs.btrfs", "-q", "-f", "--nodiscard", img)
        sh("mount", "-o", "loop,nodiscard", img, mnt)
        fd = os.open(mnt, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, QUOTA_CTL, bytearray(struct.pack("QQ", 4, 0)))  # simple quotas (6.7+)
        except OSError:
            fcntl.ioctl(fd, QUOTA_CTL, bytearray(struct.pack("QQ", 1, 0)))
        return {"mnt": mnt, "fd": fd}

    def per_workspace(s, i):
        name = ("w%d" % i).encode()
        fcntl.ioctl(s["fd"], SUBVOL_CREATE, bytearray(struct.pack("q", 0) + name.ljust(4088, b"\0")))
        sub = os.open(os.path.join(s["mnt"], "w%d" % i), os.O_RDONLY)
        fcntl.ioctl(sub, QGROUP_LIMIT, bytearray(struct.pack("QQQQQQ", 0, 1, WS_QUOTA, 0, 0, 0)))
        os.close(sub)

    def teardown(s):
        os.close(s["fd"])
        sh("umount", s["mnt"])
    return measure(setup, per_workspace, teardown, n)


def image_per_workspace(tmp, n):
    def setup():
        return {"mnts": []}

    def per_workspace(s, i):
        img, mnt = os.path.join(tmp, "ws%d.img" % i), os.path.join(tmp, "ws%d" % i)
        os.makedirs(mnt)
        with open(img, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, WS_QUOTA)
        sh("mkfs.ext4", "-q", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1", img)
        sh("mount", "-o", "loop", img, mnt)
        s["mnts"].append(mnt)

    def teardown(s):
        for m in s["mnts"]:
            sh("umount", m)
    return measure(setup, per_workspace, teardown, n)


def project_quota(tmp, fs):
    img, mnt = os.path.join(tmp, "%s.img" % fs), os.path.join(tmp, fs)
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(1 << 30)
    if fs == "xfs":
        sh("mkfs.xfs", "-q", img)
    else:
        sh("mkfs.ext4", "-q", "-O", "quota,project", img)
    ok = subprocess.run(["mount", "-o", "loop,prjquota", img, mnt], capture_output=True).returncode == 0
    if ok:
        sh("umount", mnt)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workspaces", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="4 workspaces")
    args = ap.parse_args()
    n = 4 if args.quick else args.workspaces
    if os.geteuid() != 0:
        print("quota_bench: needs root (loop devices, mounts)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="cellgate-quota-bench-", dir="/var/tmp")
    try:
        rows = [("one_volume", one_volume(tmp, n)), ("image_per_workspace", image_per_workspace(tmp, n))]
        print("quota_bench: %d workspaces; %s" % (n, os.uname().release))
        print("| option | set-up s | per workspace ms (median / max) | mounts added | loop devices added | "
              "kernel KiB at set-up | kernel KiB per workspace |")
        print("|---|---|---|---|---|---|---|")
        for name, r in rows:
            print("| %s | %.3f | %.2f / %.2f | %d | %d | %.0f | %.0f |" % (
                name, r["setup_s"], r["per_ws_ms_median"], r["per_ws_ms_max"], r["mounts"], r["loops"],
                r["kernel_kib_setup"], r["kernel_kib_per_ws"]))
        for fs in ("xfs", "ext4"):
            have = shutil.which("mkfs." + fs) and project_quota(tmp, fs)
            print("| %s project quota | %s | | | | | |" % (fs, "available" if have else "not in this kernel"))
    finally:
        for root, dirs, _ in os.walk(tmp):
            for d in dirs:
                subprocess.run(["umount", os.path.join(root, d)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
