# SPDX-License-Identifier: Apache-2.0
# The PostgreSQL backend under failure: a server restarted under load, a server down for seconds, a
# database that comes up after the gateway, and a second node on one database. Each test runs its own
# server (tests/postgres/pg_server.py), so restarting it disturbs no other test.
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

import targets as targets_mod
from jupyter_ws import KernelWS, msg_type

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "postgres"))
from pg_server import PgServer  # noqa: E402


@pytest.fixture
def pg():
    server = PgServer().start()
    yield server
    server.remove()


def gateway_on(pg, *extra):
    """A cellgate target (not started) whose state is a fresh database on pg."""
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    t = targets_mod.make_target("cellgate", extra_args=list(extra))
    t.database = pg.url(pg.create_database())
    return t


def add_alice(t):
    """User alice, whose token the target then uses (--token only serves a database without users)."""
    token = t.add_user("alice")
    t.token = token
    t.http.headers["Authorization"] = "token " + token
    return token


class Load:
    """Threads that keep asking the gateway for lists (authentication and a read each) and starting
    sessions (writes), recording every status; bounded in time, loopback only."""

    def __init__(self, t, token, kernel_id, threads=3):
        self.t, self.token, self.kernel_id = t, token, kernel_id
        self.results = []  # (time, status, body)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]

    def run(self, i):
        http = requests.Session()
        http.headers["Authorization"] = "token " + self.token
        n = 0
        deadline = time.monotonic() + 120
        while not self.stop.is_set() and time.monotonic() < deadline:
            n += 1
            try:
                if n % 3 == 0:
                    r = http.post(self.t.url + "api/sessions", timeout=30,
                                  json={"path": "n%d-%d.ipynb" % (i, n), "type": "notebook",
                                        "kernel": {"id": self.kernel_id}})
                else:
                    r = http.get(self.t.url + ("api/kernels" if n % 2 else "api/sessions"), timeout=30)
                status, body = r.status_code, r.text
            except requests.RequestException as e:
                status, body = "error", repr(e)
            with self.lock:
                self.results.append((time.monotonic(), status, body))
            time.sleep(0.02)

    def __enter__(self):
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for th in self.threads:
            th.join(60)

    def since(self, t0):
        with self.lock:
            return [r for r in self.results if r[0] >= t0]


def assert_clear_failures(results):
    """Every answer is a success or a 503 whose JSON says the database is unavailable: never a 401
    (tokens are good), a 429 (no lockout), a 500 or a dropped connection."""
    for _, status, body in results:
        if status in (200, 201):
            continue
        assert status == 503, (status, body)
        err = __import__("json").loads(body)
        assert set(err) >= {"reason", "message"}, body
        assert "database" in err["message"], body


def wait_all_ok(load, t0, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        recent = load.since(max(t0, time.monotonic() - 1.0))
        if len(recent) >= 10 and all(s in (200, 201) for _, s, _ in recent):
            return
        time.sleep(0.2)
    raise AssertionError("no recovery: %s" % [(s, b[:120]) for _, s, b in load.since(time.monotonic() - 2)])


@pytest.fixture
def alice(pg):
    """A started gateway on pg, alice's REST session and token, and a kernel of hers."""
    t = gateway_on(pg)
    token = add_alice(t)
    t.start()
    try:
        http = requests.Session()
        http.headers["Authorization"] = "token " + token
        r = http.post(t.url + "api/kernels", json={}, timeout=90)
        assert r.status_code == 201, r.text
        yield t, http, token, r.json()["id"]
    finally:
        t.stop()


def test_postgres_restarted_under_load_fails_clearly_then_recovers(pg, alice):
    t, http, token, kid = alice
    kws = KernelWS(t.url, token, kid)
    try:
        assert kws.execute("x = 41").reply["content"]["status"] == "ok"
        with Load(t, token, kid) as load:
            time.sleep(2)
            t_restart = time.monotonic()
            pg.restart(mode="fast")  # terminates every session, the gateway's included
            # The kernel and its WebSocket need no database: they kept their state throughout.
            rep = kws.execute("x + 1")
            assert rep.reply["content"]["status"] == "ok", rep.reply
            assert rep.result_text() == "42"
            wait_all_ok(load, t_restart)
            time.sleep(1)
        during = load.since(t_restart)
        assert_clear_failures(load.results)
        assert any(s == 503 for _, s, _ in during), "the restart was never seen: the test proved nothing"
        assert len(load.results) > 50, len(load.results)
    finally:
        kws.close()
    assert t.proc.poll() is None, t.log_tail()
    assert "state database reconnected" in t.log_tail(400)
    # Writes go on: a new kernel starts and its row is there.
    r = http.post(t.url + "api/kernels", json={}, timeout=90)
    assert r.status_code == 201, r.text
    assert t.db_query("SELECT count(*) FROM kernels WHERE owner = 'alice'") == [(2,)]


def test_postgres_down_for_seconds_then_back(pg, alice):
    t, http, token, kid = alice
    kws = KernelWS(t.url, token, kid)
    try:
        assert kws.execute("y = 1").reply["content"]["status"] == "ok"
        pg.stop()
        for path in ("api/kernels", "api/sessions", "api/me"):
            start = time.monotonic()
            r = http.get(t.url + path, timeout=30)
            assert r.status_code == 503, (path, r.status_code, r.text)
            assert "state database unavailable" in r.json()["message"], r.text
            assert time.monotonic() - start < 3, "a request waited on the dead database"
        # Many refusals in a row are no reason to lock the client out once the database is back.
        for _ in range(30):
            assert http.get(t.url + "api/kernels", timeout=30).status_code == 503
        rep = kws.execute("y + 1")
        assert rep.reply["content"]["status"] == "ok" and rep.result_text() == "2", rep.reply
        pg.start()
        deadline = time.monotonic() + 20
        while http.get(t.url + "api/kernels", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, t.log_tail()
            time.sleep(0.2)
        assert [k["id"] for k in http.get(t.url + "api/kernels", timeout=30).json()] == [kid]
    finally:
        kws.close()


def test_gateway_waits_for_a_database_that_starts_later(pg):
    t = gateway_on(pg)
    add_alice(t)
    pg.stop()
    starter = threading.Timer(3.0, pg.start)
    starter.start()
    try:
        t.start(timeout=60)
        assert "waiting for the state database" in t.log_tail(200)
    finally:
        starter.join()
        t.stop()


def test_a_second_node_on_one_database_is_refused_with_one_line(pg):
    first = gateway_on(pg)
    first.start()
    try:
        second = targets_mod.make_target("cellgate")
        second.database = first.database
        cmd = [second.binary, "serve", "--port", "0", "--data-dir", second.data_dir, "--runtime-dir",
               os.path.join(second.tmp, "run"), "--spawner", "plain", "--database", second.database,
               "--workspace-volume", "off"]
        out = subprocess.run(cmd, capture_output=True, timeout=60)
        assert out.returncode != 0
        err = out.stderr.decode().strip().splitlines()
        assert any("another cellgate node serves this database" in line for line in err), err
        assert first.get("api/kernels").status_code == 200
        shutil.rmtree(second.tmp, ignore_errors=True)
    finally:
        first.stop()


def server_pids(pg):
    """The postmaster and every process it forked (the backends, the gateway's connections among them)."""
    with open(os.path.join(pg.data, "postmaster.pid")) as f:
        postmaster = int(f.readline())
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return pids


def test_a_stalled_database_holds_no_other_kernels_traffic(pg, alice):
    """The server stops answering (SIGSTOP: connections stay open, nothing comes back, as behind a
    partition). A cell that writes a file waits for its snapshot's index row, and only it: another
    kernel of the same user, in another workspace, answers at once, and so does /readyz (503). Once the
    server answers again the first reply arrives, naming its snapshot, and the listing after it has that
    snapshot."""
    t, http, token, k1 = alice
    r = http.post(t.url + "api/kernels", json={"workspace": "other"}, timeout=90)
    assert r.status_code == 201, r.text
    k2 = r.json()["id"]
    ws1, ws2 = KernelWS(t.url, token, k1), KernelWS(t.url, token, k2)
    stopped = []
    try:
        assert ws1.execute("open('a.txt', 'w').write('0')").reply["content"]["status"] == "ok"
        assert ws2.execute("1 + 1").result_text() == "2"
        stopped = server_pids(pg)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        writer = ws1.send("shell", "execute_request", {"code": "open('a.txt', 'w').write('1')", "silent": False,
                                                       "store_history": True, "user_expressions": {},
                                                       "allow_stdin": False, "stop_on_error": True})
        time.sleep(1.0)  # the walk is done; its index row waits on the server
        began = time.monotonic()
        rep = ws2.execute("1 + 1", timeout=30)
        took = time.monotonic() - began
        assert rep.result_text() == "2", rep.reply
        assert took < 3, "another kernel's 1 + 1 took %.1f s while the database was stalled" % took
        # A readiness probe (public: no token to look up) says the database does not answer, in time.
        began = time.monotonic()
        r = requests.get(t.url + "readyz", timeout=30)
        took = time.monotonic() - began
        assert r.status_code == 503 and took < 5, (r.status_code, r.text, took)
        # The writer's reply waits for its index row: it has not come.
        assert not [m for m in ws1.pending if msg_type(m) == "execute_reply"], ws1.pending
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stopped = []
        done = ws1.collect(writer, timeout=30)
        assert done.reply["content"]["status"] == "ok", done.reply
        info = done.reply["metadata"]["cellgate"]
        assert info["new_snapshot"] is True and info["changed"] == ["a.txt"], info
        listed = [s["id"] for s in http.get(t.url + "api/workspaces/default/snapshots", timeout=30).json()]
        assert info["snapshot"] in listed, (info, listed)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        ws1.close()
        ws2.close()


def test_a_token_lookup_on_a_stalled_database_holds_no_other_clients_traffic(pg, alice):
    """Every request's token is looked up in the database. While the server stops answering, a request
    waiting for its lookup is answered 503 naming the database, and meanwhile the gateway goes on
    serving the clients it already has: a kernel's WebSocket answers `1 + 1` at once. (The lookup ran on
    the io thread before, which every client shares: the WebSocket waited for the server's deadline.)
    Once the server answers again, the same request is served."""
    t, http, token, kid = alice
    kws = KernelWS(t.url, token, kid)
    stopped = []
    try:
        assert kws.execute("1 + 1").result_text() == "2"
        stopped = server_pids(pg)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        answer = {}

        def ask():
            began = time.monotonic()
            try:
                r = requests.get(t.url + "api/kernels", headers={"Authorization": "token " + token}, timeout=60)
                answer["status"], answer["body"] = r.status_code, r.text
            except requests.RequestException as e:
                answer["error"] = repr(e)
            answer["took"] = time.monotonic() - began

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        time.sleep(0.5)  # its lookup now waits on the server
        began = time.monotonic()
        rep = kws.execute("1 + 1", timeout=30)
        took = time.monotonic() - began
        assert rep.result_text() == "2", rep.reply
        assert took < 3, "a kernel's 1 + 1 over its open WebSocket took %.1f s while a token lookup waited" % took
        asker.join(timeout=30)
        assert not asker.is_alive(), "the request waiting for its token lookup was never answered"
        assert answer.get("status") == 503, answer
        body = json.loads(answer["body"])
        assert "database" in body["message"] and body["reason"], body
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stopped = []
        deadline = time.monotonic() + 60
        while True:
            r = http.get(t.url + "api/kernels", timeout=30)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert r.status_code == 200 and kid in [k["id"] for k in r.json()], (r.status_code, r.text)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        kws.close()
