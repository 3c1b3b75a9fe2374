# SPDX-License-Identifier: BSD-3-Clause
# Kernel starts through the fork server never hold the gateway's io thread: while a burst of starts
# waits on a slow fork server, other clients are answered at once; every start ends in a kernel or a
# clear error (never a 500); a start the fork server answers too late fails cleanly and leaves no jail
# or cgroup behind.
import glob
import os
import re
import signal
import statistics
import threading
import time

import requests

import targets as tm

BURST = 20
# The fork server is stopped (SIGSTOP) this long while the burst is in flight: a fork server that
# answers late, as one waiting for a core on a loaded host does. A fault injected, not a speed target.
STALL = 3.0


def zygote_socket(t):
    return os.path.join(t.run_dir, "zygote.sock")


def wait_for_zygote(t, timeout=120):
    deadline = time.monotonic() + timeout
    while not os.path.exists(zygote_socket(t)):
        assert time.monotonic() < deadline, "no fork server socket:\n" + t.log_tail()
        time.sleep(0.1)


def zygote_pid(t):
    needle = zygote_socket(t).encode()
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if cmd[0].endswith(b"cellgate-zygote") and needle in cmd:
            return int(p)
    raise AssertionError("no fork server process:\n" + t.log_tail())


class Stalled:
    """The fork server stopped from entry until `seconds` later (or exit), then continued."""

    def __init__(self, t, seconds):
        self.pid, self.seconds = zygote_pid(t), seconds
        self.timer = threading.Timer(seconds, self.cont)

    def cont(self):
        try:
            os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        self.cont()


def burst(t, n, probe_path="api"):
    """n POST /api/kernels at once, while one client GETs probe_path in a loop until they have all
    answered. Returns ([(status, json or text, seconds)], [probe seconds])."""
    headers = {"Authorization": "token " + t.token}
    results = [None] * n
    probes = []
    go = threading.Barrier(n + 1)
    done = threading.Event()

    def start(i):
        s = requests.Session()
        s.headers.update(headers)
        go.wait()
        t0 = time.monotonic()
        r = s.post(t.url + "api/kernels", json={}, timeout=300)
        try:
            body = r.json()
        except ValueError:
            body = r.text
        results[i] = (r.status_code, body, time.monotonic() - t0)

    def probe():
        s = requests.Session()
        s.headers.update(headers)
        s.get(t.url + probe_path, timeout=60)  # connected before the burst
        go.wait()
        while not done.is_set():
            t0 = time.monotonic()
            r = s.get(t.url + probe_path, timeout=300)
            probes.append(time.monotonic() - t0)
            assert r.status_code == 200, r.text
            time.sleep(0.01)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(n)]
    prober = threading.Thread(target=probe)
    for th in threads + [prober]:
        th.start()
    for th in threads:
        th.join()
    done.set()
    prober.join()
    return results, probes


def processes_naming(ids):
    """Pids of processes whose command line names one of the kernel ids: a jail's helper reads
    `cellgate-jail --name ID ...`, its kernel names its connection file under the kernel's dir."""
    pids = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if any(k.encode() in cmd for k in ids):
            pids.append(int(p))
    return pids


def cgroup_dirs(kid):
    # cellgate/<kernel> (a jail started without an owner level) or cellgate/<owner>/<kernel>
    return [d for mid in ("", "*/") for d in glob.glob("/sys/fs/cgroup/*/cellgate/" + mid + kid + "*") +
            glob.glob("/sys/fs/cgroup/cellgate/" + mid + kid + "*")]


def test_io_thread_answers_while_a_burst_of_starts_waits_on_the_fork_server():
    t = tm.jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        t.delete_kernel(t.start_kernel()["id"])  # the fork server's first fork is behind us
        with Stalled(t, STALL):
            results, probes = burst(t, BURST)
        statuses = [r[0] for r in results]
        assert 500 not in statuses, ([r[:2] for r in results if r[0] == 500], t.log_tail(100))
        assert statuses == [201] * BURST, ([r[:2] for r in results if r[0] != 201], t.log_tail(100))
        starts = sorted(r[2] for r in results)
        worst = max(probes)
        print("starts: min %.3f median %.3f max %.3f s; GET /api: %d answers, median %.4f max %.4f s"
              % (starts[0], statistics.median(starts), starts[-1], len(probes), statistics.median(probes), worst))
        # Every start waited for the stalled fork server; GET /api, which needs nothing of it, must not
        # have: its slowest answer against the starts' median, both measured in this one burst.
        assert len(probes) >= 5, probes
        assert worst < 0.1 * statistics.median(starts), (worst, starts)
        for _, body, _ in results:
            assert t.delete_kernel(body["id"]).status_code == 204
    finally:
        t.stop()


def test_a_start_the_fork_server_answers_too_late_fails_cleanly():
    t = tm.jail_target("--fork-server-timeout", "1")
    t.start()
    try:
        wait_for_zygote(t)
        kid = t.start_kernel()["id"]
        # What the checks below look for is there while a jail runs: its processes, its cgroup.
        assert processes_naming([kid]) and cgroup_dirs(kid), (processes_naming([kid]), cgroup_dirs(kid))
        t.delete_kernel(kid)
        with Stalled(t, STALL):
            results, _ = burst(t, 3)
        for status, body, _ in results:
            assert status == 503, (status, body)
            assert set(body) >= {"reason", "message"} and "fork server" in body["message"], body
        failed = set(re.findall(r'kernel=(\S+) msg="kernel failed to start"', t.log_tail(400)))
        assert len(failed) == 3, t.log_tail(100)
        # Continued, the fork server forks the three jails it still holds requests for; each is killed as
        # soon as its answer arrives, and its helper removes its cgroup.
        deadline = time.monotonic() + 60
        while t.log_tail(400).count("its jail is killed") < 3:
            assert time.monotonic() < deadline, t.log_tail(100)
            time.sleep(0.2)
        while processes_naming(failed) or any(cgroup_dirs(k) for k in failed):
            assert time.monotonic() < deadline, (processes_naming(failed), [cgroup_dirs(k) for k in failed], t.log_tail(100))
            time.sleep(0.2)
        assert t.get("api/kernels").json() == []
        # The gateway and its fork server serve on.
        kid = t.start_kernel()["id"]
        assert t.delete_kernel(kid).status_code == 204
    finally:
        t.stop()


def test_a_full_per_user_start_queue_answers_429_naming_the_bound():
    t = tm.jail_target("--max-starting-per-user", "1", "--start-queue-per-user", "1")
    t.start()
    try:
        wait_for_zygote(t)
        t.delete_kernel(t.start_kernel()["id"])
        # One start runs (held by the stopped fork server), one waits its turn, the third finds the
        # user's queue full: the user's own bound, 429, not a 500 nor the gateway-busy 503.
        with Stalled(t, STALL):
            results, _ = burst(t, 3)
        statuses = sorted(r[0] for r in results)
        assert statuses == [201, 201, 429], ([r[:2] for r in results], t.log_tail(60))
        refused = [body for status, body, _ in results if status == 429][0]
        assert refused["reason"] == "Too Many Requests", refused
        assert "start_queue_per_user 1" in refused["message"], refused
        for status, body, _ in results:
            if status == 201:
                assert t.delete_kernel(body["id"]).status_code == 204
    finally:
        t.stop()


def test_restarts_take_their_turn_as_starts_do():
    t = tm.jail_target("--max-starting-per-user", "1", "--start-queue-per-user", "0")
    t.start()
    try:
        wait_for_zygote(t)
        first, second = t.start_kernel()["id"], t.start_kernel()["id"]
        answers = {}

        def restart(kid):  # a session of its own: it runs beside the test's own requests
            r = requests.post(t.url + "api/kernels/%s/restart" % kid, headers={"Authorization": "token " + t.token},
                              timeout=120)
            answers[kid] = (r.status_code, r.json())

        # The first restart holds the user's one slot while the stopped fork server holds its spawn:
        # a second restart, or a start, of the same user would be a second spawn at once.
        with Stalled(t, 8.0):
            held = threading.Thread(target=restart, args=(first,))
            held.start()
            deadline = time.monotonic() + 6
            while t.get("api/kernels/" + first).json()["execution_state"] != "starting":
                assert time.monotonic() < deadline, t.log_tail(60)
                time.sleep(0.05)
            restart(second)
            start = t.post("api/kernels", json={})
            status, body = answers[second]
            assert status == 429, (status, body, t.log_tail(60))
            assert set(body) >= {"reason", "message"} and "max_starting_per_user 1" in body["message"], body
            assert start.status_code == 429, (start.status_code, start.text)
            held.join()
        assert answers[first][0] == 200, answers[first]
        # Stopped, its relaunch refused; its owner's turn comes back once the first restart is done.
        assert t.get("api/kernels/" + second).json()["execution_state"] == "dead"
        r = t.post("api/kernels/%s/restart" % second, timeout=120)
        assert r.status_code == 200, r.text
        for kid in (first, second):
            assert t.delete_kernel(kid).status_code == 204
    finally:
        t.stop()
