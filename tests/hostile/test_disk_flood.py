# SPDX-License-Identifier: Apache-2.0
# Hole 2 of issue 20: a kernel writes into /workspace until the host's disk is full; --workspace-bytes
# was only checked at the next snapshot. The quota must hold as the bytes are written (EDQUOT or
# ENOSPC inside the kernel), uploads through the file API obey it (507 naming the limit), it must
# survive a gateway restart with the kernel still running, and nothing may leak (mounts, loop devices).
import os
import signal

import hostile as h
import targets as tm

QUOTA = 64 << 20
FILL = (
    "import errno, os\n"
    "n = 0; err = ''\n"
    "try:\n"
    "    with open('/workspace/fill.bin', 'wb') as f:\n"
    "        block = os.urandom(1 << 20)\n"
    "        while n < (%d << 20):\n"
    "            n += f.write(block)\n"
    "            f.flush()\n"
    "        os.fsync(f.fileno())\n"
    "except OSError as e:\n"
    "    err = errno.errorcode.get(e.errno, str(e.errno))\n"
    "print(n, err)\n")


def fill(t, kid, mib):
    out = h.stdout_of(h.execute(t, kid, FILL % mib, timeout=300)).split()
    return int(out[0]), (out[1] if len(out) > 1 else "")


def loop_devices_of(image):
    found = []
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                if f.read().strip() in (image, image + " (deleted)"):
                    found.append(name)
        except OSError:
            pass
    return found


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def test_a_kernel_cannot_write_past_its_workspace_quota():
    t = h.jailed(workspace_bytes="64M", workspace_volume="on")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        # What the data dir holds on the host's disk, besides the snapshot store (which the cell's
        # snapshot fills within --store-bytes: test_store_flood); mounts over it are not crossed.
        store = os.path.join(t.data_dir, "store")
        before = h.allocated_bytes(t.data_dir) - h.allocated_bytes(store)
        written, err = fill(t, kid, 512)
        spent = h.allocated_bytes(t.data_dir) - h.allocated_bytes(store) - before
        print("kernel wrote %d bytes (%s); the data dir's files on the host's disk grew by %d bytes" %
              (written, err or "no error", spent))
        assert err in ("EDQUOT", "ENOSPC"), "a write past the %d-byte quota succeeded (%d bytes written)" % (QUOTA, written)
        assert written <= QUOTA, written
        # The volume is a sparse image: the host's disk pays what the workspace holds, at most its quota
        # (and some btrfs metadata), never what the kernel tried to write.
        assert spent <= QUOTA + (16 << 20), "the data dir grew by %d bytes" % spent

        # An upload into the full workspace is refused with 507, naming the limit; nothing is lost.
        r = t.api("PUT", "api/workspaces/default/files/upload.bin", data=b"y" * (8 << 20))
        assert r.status_code == 507, (r.status_code, r.text)
        assert "quota" in r.json()["message"] and "workspace_bytes" in r.json()["message"], r.text
        r = t.get("api/workspaces/default/files/fill.bin")
        assert r.status_code == 200 and written <= len(r.content) <= QUOTA, (r.status_code, len(r.content))

        # A neighbour's workspace still takes writes: one tenant's full quota is theirs alone.
        other = t.post("api/kernels", json={"name": "python3", "workspace": "neighbour"}).json()["id"]
        n, err = fill(t, other, 8)
        assert (n, err) == (8 << 20, ""), (n, err)
        t.delete_kernel(other)

        # Deleting frees the quota again (at write time, not at a snapshot).
        h.execute(t, kid, "import os; os.remove('/workspace/fill.bin')")
        n, err = fill(t, kid, 16)
        assert (n, err) == (16 << 20, ""), (n, err)
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_the_quota_survives_a_gateway_restart_and_nothing_leaks():
    t = h.jailed(workspace_bytes="64M", workspace_volume="on")
    image = os.path.join(t.data_dir, "workspaces.img")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        h.execute(t, kid, "x = 42")
        # A crash: kernels live on in their jails with their mounts of the volume.
        t.kill_gateway()
        t.start()
        assert h.stdout_of(h.execute(t, kid, "print(x)")).strip() == "42", "re-adopted with its memory"
        written, err = fill(t, kid, 256)
        assert err in ("EDQUOT", "ENOSPC") and written <= QUOTA, (written, err)
        assert len(loop_devices_of(image)) == 1, "one loop device for the volume, whatever the restarts"
        t.delete_kernel(kid)
        t.terminate_gateway()  # no kernel left: it unmounts the volume, and the loop device goes with it
        assert not mounted(os.path.join(t.data_dir, "workspaces"))
        h.wait_until(lambda: not loop_devices_of(image), 10, "the loop device to detach")
    finally:
        t.stop()
