# SPDX-License-Identifier: BSD-3-Clause
# --ipc-tmpfs: the kernels' dirs (<runtime-dir>/k: connection file with the kernel's key, ipc sockets;
# <runtime-dir>/s: status, stderr log) on tmpfs the gateway mounts, never on a disk; left alone when
# they already hold kernels' dirs.
import os
import shutil
import subprocess

import targets as tm


jail_target = tm.jail_target


def mounts_at(path):
    """File system types mounted exactly at path, in mount order (/proc/self/mountinfo)."""
    path = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if left.split()[4] == path:
                found.append(right.split()[0])
    return found


def unmount_all(path):
    while mounts_at(path):
        subprocess.run(["umount", path], check=True)


def finish(t):
    """Stops the gateway and its kernels (stop() cannot remove the mount points), unmounts, removes the
    temp dir."""
    t.stop()
    unmount_all(os.path.join(t.run_dir, "k"))
    unmount_all(os.path.join(t.run_dir, "s"))
    shutil.rmtree(t.tmp, ignore_errors=True)


def test_on_mounts_a_tmpfs_that_holds_the_kernels_dirs():
    t = jail_target("--ipc-tmpfs", "on")
    kdir = os.path.join(t.run_dir, "k")
    try:
        t.start()
        assert mounts_at(kdir) == ["tmpfs"], t.log_tail()
        assert mounts_at(os.path.join(t.run_dir, "s")) == ["tmpfs"], t.log_tail()
        assert "kernels' dirs in memory" in t.log_tail()
        kid = t.start_kernel()["id"]
        assert os.path.exists(os.path.join(kdir, kid, "connection.json"))
        # The kernel's own dir is where its connection file is: it writes there, into memory.
        r = t.post("api/kernels/%s/execute" % kid, json={"code": (
            "import sys, os\n"
            "d = os.path.dirname(sys.argv[sys.argv.index('-f') + 1])\n"
            "open(os.path.join(d, 'note'), 'w').write('x' * 4096)\n"), "timeout": 60})
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        with open(os.path.join(kdir, kid, "note")) as f:
            assert f.read() == "x" * 4096
        t.delete_kernel(kid)
        assert not os.path.exists(os.path.join(kdir, kid)), "the kernel's dir goes with it"
        # A restart finds its tmpfs and mounts no second one over it.
        t.terminate_gateway()
        t.start()
        assert mounts_at(kdir) == ["tmpfs"], mounts_at(kdir)
        assert mounts_at(os.path.join(t.run_dir, "s")) == ["tmpfs"]
        kid = t.start_kernel()["id"]
        assert os.path.exists(os.path.join(t.run_dir, "s", kid, "jail.json"))
        t.delete_kernel(kid)
    finally:
        finish(t)


def test_on_refuses_a_disk_dir_that_holds_kernels_dirs():
    t = jail_target("--ipc-tmpfs", "on")
    kdir = os.path.join(t.run_dir, "k")
    os.makedirs(os.path.join(kdir, "an-older-kernel"))
    try:
        cmd = [t.binary, "serve", "--port", "0", "--data-dir", t.data_dir, "--runtime-dir", t.run_dir,
               "--spawner", "plain", "--ipc-tmpfs", "on", "--workspace-volume", "off"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert out.returncode != 0
        err = out.stderr.strip().splitlines()
        assert len(err) == 1 and "--ipc-tmpfs on" in err[0] and "holds kernels' dirs" in err[0], out.stderr
        assert mounts_at(kdir) == []
        assert os.listdir(kdir) == ["an-older-kernel"], "nothing stored is touched"
    finally:
        finish(t)


def test_auto_leaves_a_runtime_dir_that_was_named_alone():
    t = jail_target()  # --runtime-dir is given by the harness: auto does not mount
    try:
        t.start()
        assert mounts_at(os.path.join(t.run_dir, "k")) == mounts_at(os.path.join(t.run_dir, "s")) == []
        kid = t.start_kernel()["id"]
        t.delete_kernel(kid)
    finally:
        finish(t)
