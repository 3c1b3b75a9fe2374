# SPDX-License-Identifier: Apache-2.0
# Hole 1 of issue 20: a kernel writes to its original stdout, which its jail helper copies into
# kernel.log on the runtime tmpfs: pages charged to the helper, outside the kernel's cgroup. The log
# must keep only its newest --kernel-log-bytes, the tmpfs must have a size, and the helper must not
# copy faster than that many bytes a second (a faster kernel waits on its full pipe).
import os
import shutil
import subprocess

import hostile as h

LOG_BYTES = 1 << 20
FLOOD_BYTES = 256 << 20
# ipykernel captures fds 1 and 2 for iopub and keeps a copy of the original stdout, the helper's
# pipe: that copy is what a hostile cell writes to.
FLOOD = (
    "import os, sys, time\n"
    "fd = getattr(sys.stdout, '_original_stdstream_copy', None) or 1\n"
    "t0 = time.time(); n = 0; line = b'x' * 4095 + b'\\n'\n"
    "while n < %d and time.time() - t0 < 8:\n"
    "    n += os.write(fd, line * 16)\n"
    "os.write(fd, b'END-OF-FLOOD\\n')\n"
    "print(n, time.time() - t0)\n" % FLOOD_BYTES)


def tmpfs_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def unmount(path):
    while subprocess.run(["mountpoint", "-q", path]).returncode == 0:
        subprocess.run(["umount", path], check=True)


def test_stdout_flood_costs_the_host_at_most_the_log_bound():
    t = h.jailed(ipc_tmpfs="on", kernel_log_bytes="1M")
    s_dir = os.path.join(t.run_dir, "s")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        gw_before = h.rss_kib(t.proc.pid)
        helper = h.jail_status(t, kid)["helper_pid"]
        helper_rss_before = h.rss_kib(helper)
        used_before, shmem_before = tmpfs_used(s_dir), h.shmem_kib()

        out = h.stdout_of(h.execute(t, kid, FLOOD, timeout=180)).split()
        assert len(out) == 2, "the flood went to iopub, not to the helper: %r" % out[:4]
        written, seconds = int(out[0]), float(out[1])
        log = os.path.join(s_dir, kid, "kernel.log")
        h.wait_until(lambda: b"END-OF-FLOOD" in open(log, "rb").read(), 30, "the flood's end in the log")

        log_size = os.path.getsize(log)
        used = tmpfs_used(s_dir) - used_before
        shmem = h.shmem_kib() - shmem_before
        gw = h.rss_kib(t.proc.pid) - gw_before
        helper_rss = h.rss_kib(helper) - helper_rss_before
        helper_cpu = h.cpu_seconds(helper)
        print("kernel wrote %d bytes in %.1f s; kernel.log %d bytes; s/ tmpfs +%d bytes; host Shmem %+d KiB; "
              "gateway RSS %+d KiB; helper RSS %+d KiB, CPU %.2f s" %
              (written, seconds, log_size, used, shmem, gw, helper_rss, helper_cpu))
        st = os.statvfs(s_dir)
        assert st.f_blocks * st.f_frsize < os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2, \
            "the runtime tmpfs that holds the logs has a size below the tmpfs default"
        assert log_size <= LOG_BYTES, "kernel.log holds %d bytes (bound %d)" % (log_size, LOG_BYTES)
        assert used <= 2 * LOG_BYTES, "the runtime tmpfs grew by %d bytes" % used
        # The helper relays at most LOG_BYTES a second; the kernel waits on its full pipe beyond that
        # (what the pipe holds, up to its 1 MiB maximum, is on top).
        assert written <= (seconds + 1) * LOG_BYTES + (2 << 20), "the kernel wrote %d bytes in %.1f s" % (written, seconds)
        assert gw < 16 << 10, "the gateway grew by %d KiB" % gw
        with open(log, "rb") as f:
            tail = f.read()
        assert tail.endswith(b"END-OF-FLOOD\n") and tail.startswith(b"x"), "the log keeps the newest lines, whole"
        t.delete_kernel(kid)
    finally:
        t.stop()
        unmount(os.path.join(t.run_dir, "k"))
        unmount(s_dir)
        shutil.rmtree(t.tmp, ignore_errors=True)
