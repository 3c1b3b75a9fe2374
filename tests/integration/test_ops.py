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
