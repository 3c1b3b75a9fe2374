# SPDX-License-Identifier: Apache-2.0
# Operations routes: the pages (/, /admin, /static/...), /healthz and /readyz without a token and
# revealing nothing, and /metrics for an admin or --metrics-token only; the Prometheus text format
# with the figures a scrape should see after a kernel started and was refused.
import os
import subprocess
import time

import pytest
import requests

import targets as targets_mod

METRICS_TOKEN = "metrics-" + os.urandom(8).hex()


@pytest.fixture(scope="module")
def gw():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    tokens = {}

    def add_users(t):
        tokens["ana"] = t.add_user("ana", "--max-kernels", "1")
        tokens["root"] = t.add_user("root", "--admin")
        t.token = tokens["root"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.make_target("cellgate", pre_start=add_users,
                                extra_args=["--metrics-token", METRICS_TOKEN, "--metrics-per-user", "true"])
    t.start()
    yield t, tokens
    t.stop()


def get(t, path, token=None, **kw):
    headers = kw.pop("headers", {})
    if token:
        headers["Authorization"] = "token " + token
    return requests.get(t.url + path, headers=headers, timeout=30, **kw)


def test_health_needs_no_token_and_says_nothing_else(gw):
    t, _ = gw
    r = get(t, "healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    deadline = time.monotonic() + 60  # the fork server takes a moment to listen
    while True:
        r = get(t, "readyz")
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        assert r.status_code == 503 and r.json() == {"status": "unavailable"}, r.text
        time.sleep(0.5)
    assert r.status_code == 200 and r.json() == {"status": "ready"}, r.text
    # Another method is an unauthenticated request to the router, like any other: 401, not a hint.
    assert requests.post(t.url + "readyz", timeout=10).status_code == 401


def test_pages_are_served_with_their_policy(gw):
    t, _ = gw
    for path in ("", "admin"):
        r = get(t, path)
        assert r.status_code == 200, path
        assert r.headers["Content-Type"].startswith("text/html")
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert r.headers["Referrer-Policy"] == "no-referrer"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert '<script src="static/app.js"' in r.text
    js = get(t, "static/app.js")
    assert js.status_code == 200 and js.headers["Content-Type"].startswith("text/javascript")
    again = get(t, "static/app.js", headers={"If-None-Match": js.headers["ETag"]})
    assert again.status_code == 304 and again.content == b""
    for bad in ("static/nope.js", "static/..%2Fapp.js", "static/%2e%2e%2fadmin"):
        r = get(t, bad)
        assert r.status_code == 404, bad
        assert set(r.json()) >= {"reason", "message"}
    # Paths no public route serves are like any other: a token first, then 404.
    for other in ("static/", "admin/x", "static/a/b"):
        assert get(t, other).status_code == 401, other
        assert get(t, other, t.token).status_code == 404, other


def test_metrics_admin_or_metrics_token_only(gw):
    t, tokens = gw
    assert get(t, "metrics").status_code == 401
    assert get(t, "metrics", "wrong").status_code == 401
    r = get(t, "metrics", tokens["ana"])
    assert r.status_code == 403 and set(r.json()) >= {"reason", "message"}
    assert get(t, "metrics", tokens["root"]).status_code == 200
    r = get(t, "metrics", METRICS_TOKEN)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    # The metrics token opens nothing else.
    assert get(t, "api/kernels", METRICS_TOKEN).status_code == 401
    assert get(t, "api/me", METRICS_TOKEN).status_code == 401


def test_metrics_count_a_start_a_refusal_and_iopub(gw):
    t, tokens = gw
    h = {"Authorization": "token " + tokens["ana"]}
    r = requests.post(t.url + "api/kernels", json={"name": "python3"}, headers=h, timeout=120)
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    try:
        refused = requests.post(t.url + "api/kernels", json={"name": "python3"}, headers=h, timeout=60)
        assert refused.status_code == 403
        ex = requests.post(t.url + "api/kernels/%s/execute" % kid, json={"code": "print('x' * 1000)"},
                           headers=h, timeout=120)
        assert ex.json()["status"] == "ok"
        if t.spawner == "jail":  # the plain spawner has no freezer
            for action in ("pause", "resume"):
                r = requests.post(t.url + "api/kernels/%s/%s" % (kid, action), headers=h, timeout=60)
                assert r.status_code == 200, r.text
        text = get(t, "metrics", METRICS_TOKEN).text
        lines = set(text.splitlines())
        assert 'cellgate_kernels{kernelspec="python3",state="idle"} 1' in lines, text[:2000]
        starts = [l for l in lines if l.startswith("cellgate_kernel_start_seconds_count{")]
        assert sum(float(l.split()[-1]) for l in starts) >= 1, starts
        assert any(l.startswith('cellgate_requests_refused_total{reason="quota"} ') and not l.endswith(" 0")
                   for l in lines), text
        def value(name):
            found = [l for l in lines if l.startswith(name + " ")]
            assert found, (name, text[:3000])
            return float(found[0].split()[-1])
        assert value("cellgate_execute_seconds_count") >= 1
        if t.spawner == "jail":
            assert value("cellgate_kernel_pauses_total") >= 1 and value("cellgate_kernel_resumes_total") >= 1
            assert value("cellgate_kernel_cpu_seconds_total") > 0
        iopub = [l for l in lines if l.startswith("cellgate_iopub_bytes_total ")]
        assert iopub and float(iopub[0].split()[1]) > 1000, iopub
        assert 'cellgate_user_kernels{user="ana"} 1' in lines
        memory = [l for l in lines if l.startswith('cellgate_user_memory_bytes{user="ana"} ')]
        if t.spawner == "jail":
            assert memory and float(memory[0].split()[1]) > 10e6, memory  # an ipykernel's cgroup
        promtool = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
        assert promtool.returncode == 0, promtool.stdout + promtool.stderr
    finally:
        requests.delete(t.url + "api/kernels/" + kid, headers=h, timeout=60)


def test_readyz_fails_when_no_jail_can_start():
    """/readyz starts a real probe jail: with a helper that cannot build one it says unavailable (and
    only that), and the log says why; /healthz still answers."""
    t = targets_mod.make_target("cellgate", spawner="jail", extra_args=["--fork-server", "off", "--jail-helper", "/bin/false"])
    t.start()
    try:
        assert get(t, "healthz").status_code == 200
        r = get(t, "readyz")
        assert r.status_code == 503 and r.json() == {"status": "unavailable"}, r.text
        with open(t.log_path, errors="replace") as f:
            assert "a probe jail failed" in f.read()
        # Probed at most once a minute: a burst of probes starts no more jails, and answers alike.
        for _ in range(20):
            assert get(t, "readyz").status_code == 503
        with open(t.log_path, errors="replace") as f:
            assert f.read().count("not ready") == 1
    finally:
        t.stop()


def metric(t, name, token=METRICS_TOKEN):
    """The value of one unlabelled (or fully labelled) series, e.g. 'x_total' or 'x{reason="auth"}'."""
    text = get(t, "metrics", token).text
    found = [l for l in text.splitlines() if l.startswith(name + " ")]
    assert len(found) == 1, (name, text[:3000])
    return float(found[0].split()[-1])


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < %s: pass\nprint('burnt')"


def test_kernel_cpu_counter_keeps_stopped_and_restarted_kernels(gw):
    """cellgate_kernel_cpu_seconds_total is a counter: the CPU of a kernel that restarted or was shut
    down (with no scrape in between) stays in it. The cgroups' readings alone drop to zero."""
    t, tokens = gw
    if t.spawner != "jail":
        pytest.skip("CPU time comes from the jail's cgroup")
    h = {"Authorization": "token " + tokens["ana"]}

    def burn(kid, seconds):
        r = requests.post(t.url + "api/kernels/%s/execute" % kid, json={"code": BURN % seconds}, headers=h, timeout=120)
        assert r.json()["status"] == "ok", r.text

    before = metric(t, "cellgate_kernel_cpu_seconds_total")
    kid = requests.post(t.url + "api/kernels", json={"name": "python3"}, headers=h, timeout=120).json()["id"]
    try:
        burn(kid, 1.0)
        seen = metric(t, "cellgate_kernel_cpu_seconds_total")
        assert seen >= before + 0.9, (before, seen)
        r = requests.post(t.url + "api/kernels/%s/restart" % kid, headers=h, timeout=120)
        assert r.status_code == 200, r.text
        after_restart = metric(t, "cellgate_kernel_cpu_seconds_total")
        assert after_restart >= seen, (seen, after_restart)
        burn(kid, 1.0)  # in the restarted process, then shut down before any scrape sees it
    finally:
        assert requests.delete(t.url + "api/kernels/" + kid, headers=h, timeout=60).status_code == 204
    after_stop = metric(t, "cellgate_kernel_cpu_seconds_total")
    assert after_stop >= after_restart + 0.9, (after_restart, after_stop)
    assert metric(t, 'cellgate_user_cpu_seconds_total{user="ana"}') >= after_stop - before - 0.01
    assert metric(t, "cellgate_kernel_cpu_seconds_total") == after_stop


def test_store_and_workspace_bytes_move_by_what_was_written(gw):
    """A 3 MiB file of random bytes, snapshotted, raises cellgate_store_bytes and
    cellgate_workspace_bytes by about 3 MiB; deleted and snapshotted again, the workspace's figure
    falls back while the store keeps the object (the history still holds it)."""
    t, tokens = gw
    h = {"Authorization": "token " + tokens["ana"]}
    size = 3 << 20

    def storage(wait_for=None):
        deadline = time.monotonic() + 30
        while True:
            figures = (metric(t, "cellgate_store_bytes"), metric(t, "cellgate_workspace_bytes"))
            if wait_for is None or wait_for(*figures) or time.monotonic() > deadline:
                return figures
            time.sleep(0.5)

    def snapshot(ws):
        r = requests.post(t.url + "api/workspaces/%s/snapshots" % ws, json={"label": "metrics-test"}, headers=h,
                          timeout=120)
        assert r.status_code in (200, 201), r.text

    def run(kid, code):
        r = requests.post(t.url + "api/kernels/%s/execute" % kid, json={"code": code}, headers=h, timeout=120)
        assert r.json()["status"] == "ok", r.text

    k = requests.post(t.url + "api/kernels", json={"name": "python3"}, headers=h, timeout=120).json()
    try:
        run(k["id"], "print('settle')")
        snapshot(k["workspace"])
        time.sleep(2.5)  # past the 2 s a measure is kept while snapshots change
        store0, ws0 = storage()
        run(k["id"], "import os\nopen('metrics-blob.bin', 'wb').write(os.urandom(%d))" % size)
        snapshot(k["workspace"])
        store1, ws1 = storage(lambda s, w: s - store0 >= size and w - ws0 >= size)
        assert size <= store1 - store0 <= size + (256 << 10), (store0, store1)
        assert size <= ws1 - ws0 <= size + (64 << 10), (ws0, ws1)
        run(k["id"], "import os\nos.remove('metrics-blob.bin')")
        snapshot(k["workspace"])
        store2, ws2 = storage(lambda s, w: w <= ws1 - size)
        assert abs(ws2 - ws0) <= 64 << 10, (ws0, ws1, ws2)
        assert store1 <= store2 <= store1 + (64 << 10), (store1, store2)
    finally:
        requests.delete(t.url + "api/kernels/" + k["id"], headers=h, timeout=60)
