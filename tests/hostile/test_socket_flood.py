# SPDX-License-Identifier: Apache-2.0
# Found while auditing the jail for issue 20 (its item "look for the rest"): on a cgroup v1 host
# nothing charged a kernel's TCP and UDP socket buffers to its memory cgroup. Over its own loopback a
# kernel queued the host's whole net.ipv4.tcp_mem (2.2 GiB here), memory outside every limit, after
# which every TCP socket on the host (the gateway's clients') is under memory pressure. This test
# stops at 320 MiB, enough to see the bound broken without taking the host's sockets down. The buffers
# must stay within the kernel's own bound (on v1 memory.kmem.tcp.limit_in_bytes, a quarter of its
# memory limit; on v2 memory.max itself).
import threading
import time

import hostile as h

MEMORY = 512 << 20
FLOOD = (
    "import socket, time\n"
    "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1000)\n"
    "conns = []; total = 0; chunk = b'x' * 65536\n"
    "try:\n"
    # Past the bound, not up to the host's whole tcp_mem: an unbounded kernel then only costs the
    # host 320 MiB for a few seconds, not every socket's service.
    # A connect past the bound waits for its lost SYN to be resent: a timeout ends the flood.
    "    while total < (320 << 20) and len(conns) < 200:\n"
    "        c = socket.create_connection(('127.0.0.1', srv.getsockname()[1]), timeout=2); s, _ = srv.accept()\n"
    "        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)\n"
    "        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)\n"
    "        c.setblocking(False)\n"
    "        try:\n"
    "            while True: total += c.send(chunk)\n"
    "        except (BlockingIOError, OSError): pass\n"
    "        conns.append((c, s))\n"
    "except OSError as e: pass\n"
    "time.sleep(4)\n"
    "print(len(conns), total)\n")


def tcp_mem_bytes():
    """The host's TCP buffer memory (/proc/net/sockstat "TCP: ... mem N", pages; one counter for
    every network namespace: net.ipv4.tcp_mem is host-wide)."""
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                fields = line.split()
                return int(fields[fields.index("mem") + 1]) * 4096
    return 0


def test_socket_buffers_stay_within_the_kernels_bound():
    t = h.jailed("--kernel-memory", "512M")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        before = tcp_mem_bytes()
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], tcp_mem_bytes())
                time.sleep(0.05)
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            out = h.stdout_of(h.execute(t, kid, FLOOD, timeout=120)).split()
        finally:
            done.set()
            sampler.join()
        conns, queued = int(out[0]), int(out[1])
        grown = peak[0] - before
        print("%d connections, %d bytes queued; the host's TCP memory grew by %d bytes" % (conns, queued, grown))
        bound = MEMORY // 4 + (16 << 20)
        assert grown <= bound, "the host's TCP buffers grew by %d bytes (bound %d)" % (grown, bound)
        assert t.get("api").status_code == 200, "the gateway serves on"
        t.delete_kernel(kid)
    finally:
        t.stop()
