# SPDX-License-Identifier: Apache-2.0
# Issue 20's noisy neighbour: a kernel that prints as fast as it can made the gateway's one io thread
# (which every kernel's messages go through) read, verify and pass on ~140 MB/s of its output, at
# 0.1-0.35 of a core spent outside the kernel's cgroup. --kernel-output-rate bounds what the gateway
# reads from one kernel's iopub: past it the rest waits in the kernel's socket and its own queue
# (charged to its cgroup; its high-water mark drops the excess there).
#
# Only an upper bound on the bytes that reach a client in a window is checked (a slower host delivers
# less, never more), and the shell reply, which is not paced, must still come.
import contextlib
import time

import jupyter_ws as jws
import hostile as h

RATE = 1 << 20
WINDOW = 4.0
FLOOD = ("import sys, time\n"
         "line = 'x' * 65535 + '\\n'\n"
         "t0 = time.time()\n"
         "while time.time() - t0 < %.1f:\n"
         "    sys.stdout.write(line)\n"
         "    sys.stdout.flush()\n" % (WINDOW + 2))


@contextlib.contextmanager
def paced_kernel_running(code):
    """A jailed gateway at RATE, a kernel, its WebSocket, and `code` sent: yields (target, kernel id,
    socket, the execute's msg_id)."""
    t = h.jailed(kernel_output_rate=RATE)
    try:
        t.start()
        kid = t.start_kernel()["id"]
        kws = jws.KernelWS(t.url, t.token, kid)
        try:
            msg_id = kws.send("shell", "execute_request", {"code": code, "silent": False, "store_history": False,
                                                             "user_expressions": {}, "allow_stdin": False})
            yield t, kid, kws, msg_id
        finally:
            kws.close()
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_a_kernel_flooding_its_output_is_read_no_faster_than_the_rate():
    with paced_kernel_running(FLOOD) as (t, kid, kws, msg_id):
        began, got, reply, closed = time.monotonic(), 0, None, None
        while time.monotonic() - began < WINDOW:
            try:
                opcode, data = kws.recv_raw(max(0.05, WINDOW - (time.monotonic() - began)))
            except TimeoutError:
                break
            except Exception as e:  # noqa: BLE001 - the gateway closed the socket (its queue bound)
                closed = "%s: %s (close frame %r)" % (type(e).__name__, e, kws.close_frame)
                break
            got += len(data)
        seconds = time.monotonic() - began
        if closed is None:
            reply = kws.wait_for(lambda m: m.get("channel") == "shell" and jws.parent_id(m) == msg_id, timeout=60)
        print("a kernel printing as fast as it can: %d bytes reached the client in %.1f s (rate %d bytes/s); "
              "socket closed: %s" % (got, seconds, RATE, closed))
        assert closed is None, "the client's WebSocket was closed while the kernel flooded: " + closed
        assert got <= RATE * (seconds + 1) + (2 << 20), (
            "%d bytes of one kernel's output were read in %.1f s, past --kernel-output-rate %d" % (got, seconds, RATE))
        assert got > 0, "nothing of the kernel's output arrived"
        assert reply["content"]["status"] == "ok", reply["content"]


# A cell that prints many small messages faster than the gateway reads them (the rate above) fills
# its kernel's iopub queue, whose high-water mark drops the excess, its idle included. The execute_reply
# on shell still comes. The gateway must then bring the lost idle back (a kernel_info_request, which
# makes the kernel publish its status again): a kernel left busy is skipped by idle culling and shown
# busy by every client until its next request.
SMALL_FLOOD = ("import sys, time\n"
               "line = 'y' * 1023 + '\\n'\n"
               "t0 = time.time()\n"
               "while time.time() - t0 < 3:\n"
               "    sys.stdout.write(line)\n"
               "    sys.stdout.flush()\n")


def test_a_kernel_whose_idle_its_output_queue_dropped_is_idle_again():
    with paced_kernel_running(SMALL_FLOOD) as (t, kid, kws, msg_id):
        reply = kws.wait_for(lambda m: m.get("channel") == "shell" and jws.parent_id(m) == msg_id, timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        # The queue drains at the rate (~1 MiB of small messages: about a second), then the
        # gateway's probe comes within a heartbeat or two.
        deadline, state = time.monotonic() + 30, None
        while time.monotonic() < deadline:
            state = t.get("api/kernels/" + kid).json()["execution_state"]
            if state == "idle":
                break
            time.sleep(0.5)
        print("after a flood of small messages past the rate, the kernel is %s" % state)
        assert state == "idle", (
            "the kernel still shows %r 30 s after its reply: the idle its iopub queue dropped did not come back" % state)
