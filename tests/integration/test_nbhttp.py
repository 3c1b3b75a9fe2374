# SPDX-License-Identifier: Apache-2.0
"""notebook-http (Kernel Gateway's second personality): `cellgate serve --notebook-http api.ipynb`
answers curl and Python requests from a pool of jailed kernels seeded with the notebook's other cells."""
import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

import targets as targets_mod

HERE = os.path.dirname(os.path.abspath(__file__))
API_NB = os.path.join(HERE, "nbhttp", "api.ipynb")


class NotebookHttpTarget(targets_mod.CellgateTarget):
    """cellgate in notebook-http mode: ready once an endpoint answers (the pool has started)."""

    def _wait_http(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("cellgate exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                if self.get("hello", timeout=30).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError("notebook-http not answering after %ss:\n%s" % (timeout, self.log_tail()))


def serve(*args):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    spawner = os.environ.get("CELLGATE_TEST_SPAWNER", "plain")
    return NotebookHttpTarget(path, spawner=spawner, extra_args=["--notebook-http", *args]).start(timeout=120)


@pytest.fixture(scope="module")
def nb():
    t = serve(API_NB, "--notebook-http-pool", "2", "--notebook-http-timeout", "6",
              "--notebook-http-max-body", "4K")
    yield t
    t.stop()


def pool_kernels(t):
    """The kernels the gateway has recorded for the pool (its database)."""
    return [r[0] for r in t.db_query("SELECT id FROM kernels WHERE owner = 'notebook-http'")]


def test_pool_has_exactly_its_kernels(nb):
    # Requests that arrive while the pool starts wait for it; they never start kernels of their own.
    time.sleep(2)
    assert len(pool_kernels(nb)) == 2


def curl(t, *args):
    out = subprocess.run(["curl", "-sS", "-i", "-H", "Authorization: token " + t.token, *args],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    head, _, body = out.stdout.decode().partition("\r\n\r\n")
    status = int(head.split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in head.split("\r\n")[1:])}
    return status, headers, body


def test_curl_get_and_post(nb):
    status, headers, body = curl(nb, nb.url + "hello?name=curl")
    assert (status, body) == (200, "hello, curl\n")
    assert headers["content-type"] == "text/plain"
    status, headers, body = curl(nb, "-X", "POST", "-H", "Content-Type: application/json",
                                 "-d", '{"colour": "red"}', nb.url + "items/42")
    assert status == 201  # set by the ResponseInfo cell
    assert headers["content-type"] == "application/json"
    assert headers["x-item-id"] == "42"
    assert json.loads(body) == {"id": "42", "body": {"colour": "red"}, "content_type": "application/json"}


def test_python_requests(nb):
    r = nb.get("hello")
    assert (r.status_code, r.text) == (200, "hello, world\n")
    r = nb.post("items/a%20b", data="plain text", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201
    assert r.json() == {"id": "a b", "body": "plain text", "content_type": "text/plain"}
    r = nb.post("items/7", data={"k": ["v1", "v2"]})  # form-encoded
    assert r.json()["body"] == {"k": ["v1", "v2"]}


def test_request_object_has_kg_fields(nb):
    r = nb.get("echo?a=1&a=2&b=", headers={"X-Thing": "yes"})
    assert r.status_code == 200
    req = json.loads(r.text)
    assert set(req) == {"body", "args", "path", "headers"}
    assert req["args"] == {"a": ["1", "2"], "b": [""]}
    assert req["path"] == {}
    assert req["headers"]["X-Thing"] == "yes"
    # The gateway's token authenticated the request; kernel code never sees it.
    assert "Authorization" not in req["headers"]
    r = nb.api("GET", "echo?token=%s&c=3" % nb.token, headers={"Authorization": None})
    assert r.status_code == 200
    assert json.loads(r.text)["args"] == {"c": ["3"]}


def test_execute_result_is_the_body_without_stdout(nb):
    r = nb.get("result")
    assert r.status_code == 200
    assert r.json() == {"text/plain": "{'answer': 42}"}


def test_runs_in_the_jail_with_seeded_state(nb):
    if nb.spawner != "jail":
        pytest.skip("plain spawner")
    who = nb.get("whoami").json()
    assert who["uid"] == 1000 and who["host"] == "sandbox" and who["cwd"] == "/workspace"


def test_unknown_path_wrong_method_and_errors(nb):
    r = nb.get("nope")
    assert r.status_code == 404 and r.json()["reason"] == "Not Found"
    r = nb.get("items/1")
    assert r.status_code == 405 and "DELETE" in r.headers["Allow"] and "POST" in r.headers["Allow"]
    r = nb.get("fail")
    assert r.status_code == 500
    assert r.json()["ename"] == "ZeroDivisionError" and r.json()["message"].startswith("Error ZeroDivisionError")
    # The Jupyter API is not served in this mode.
    assert nb.get("api/kernels").status_code == 404
    assert nb.get("api").status_code == 404


def test_response_info_cannot_inject_headers(nb):
    r = nb.get("badinfo")
    assert r.status_code == 500 and "Set-Cookie" not in r.headers
    assert "header value is not valid" in r.json()["message"]
    r = nb.get("notjson")
    assert r.status_code == 500 and "JSON object" in r.json()["message"]


def test_token_is_required(nb):
    r = requests.get(nb.url + "hello", timeout=30)
    assert r.status_code == 401
    r = requests.get(nb.url + "hello", headers={"Authorization": "token wrong"}, timeout=30)
    assert r.status_code == 401


def test_body_size_is_bounded(nb):
    r = nb.post("items/1", data="x" * 8192)
    assert r.status_code == 413
    assert nb.get("hello").status_code == 200


def test_requests_to_one_kernel_are_serialised(nb):
    # Two kernels, four requests of 1.5 s each: two rounds, never four at once.
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        rs = list(ex.map(lambda _: nb.get("sleep?s=1.5"), range(4)))
    took = time.monotonic() - started
    assert [r.status_code for r in rs] == [200] * 4, [r.text for r in rs]
    assert took >= 3.0, took
    pids = {nb.get("whoami").json()["pid"] for _ in range(6)}
    assert 1 <= len(pids) <= 2


def test_request_time_is_bounded(nb):
    started = time.monotonic()
    r = nb.get("sleep?s=30")
    assert r.status_code == 504, r.text
    assert time.monotonic() - started < 20
    # The kernel was interrupted and serves again.
    assert nb.get("hello").text == "hello, world\n"


def test_dead_kernel_comes_back_seeded(nb):
    r = nb.get("die")
    assert r.status_code == 503, r.text
    deadline = time.monotonic() + 90
    oks = 0
    while time.monotonic() < deadline and oks < 4:
        r = nb.get("hello", timeout=60)
        oks = oks + 1 if r.status_code == 200 else 0
        if r.status_code == 200:
            assert r.text == "hello, world\n"  # GREETING comes from the seed cells
    assert oks == 4
    assert len(pool_kernels(nb)) == 2


def test_public_mode_needs_no_token():
    t = serve(API_NB, "--notebook-http-pool", "1", "--notebook-http-public", "true")
    try:
        r = requests.get(t.url + "hello?name=anyone", timeout=60)
        assert (r.status_code, r.text) == (200, "hello, anyone\n")
    finally:
        t.stop()


def test_failing_seed_stops_the_server(tmp_path):
    nbook = json.load(open(API_NB))
    nbook["cells"].insert(2, {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                              "source": "raise RuntimeError('no seed for you')"})
    bad = tmp_path / "bad.ipynb"
    bad.write_text(json.dumps(nbook))
    path, _ = targets_mod.cellgate_binary()
    run = tempfile.mkdtemp(prefix="cgnb-")  # ipc socket paths must stay short; pytest's tmp_path is long
    try:
        out = subprocess.run([path, "serve", "--port", "0", "--notebook-http", str(bad), "--data-dir",
                              str(tmp_path / "data"), "--runtime-dir", run, "--workspace-volume", "off",
                              "--spawner", os.environ.get("CELLGATE_TEST_SPAWNER", "plain")],
                             capture_output=True, timeout=120)
    finally:
        shutil.rmtree(run, ignore_errors=True)
    assert out.returncode == 1
    err = out.stderr.decode()
    assert "cell 3 failed: RuntimeError: no seed for you" in err, err


def test_notebook_without_endpoints_is_a_config_error(tmp_path):
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                 "cells": [{"cell_type": "code", "metadata": {}, "source": "x = 1",
                                            "outputs": [], "execution_count": None}]}))
    path, _ = targets_mod.cellgate_binary()
    out = subprocess.run([path, "serve", "--notebook-http", str(plain), "--data-dir", str(tmp_path / "d"),
                          "--workspace-volume", "off"],
                         capture_output=True, timeout=60)
    assert out.returncode == 2
    assert "no endpoints were discovered" in out.stderr.decode()
