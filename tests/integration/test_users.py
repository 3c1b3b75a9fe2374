# SPDX-License-Identifier: Apache-2.0
# Several users on one gateway: ownership (404 for others), quotas, admin view, restart, culling.
import json
import os
import time

import pytest
import requests
import websocket

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(),
                                reason="users, restart and culling are cellgate extensions")


def cellgate_target(**kw):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    return targets_mod.make_target("cellgate", **kw)


class User:
    """REST client with one user's token."""

    def __init__(self, target, name, token):
        self.target, self.name, self.token = target, name, token
        self.http = requests.Session()
        self.http.headers["Authorization"] = "token " + token

    def api(self, method, path, **kw):
        kw.setdefault("timeout", 90)
        return self.http.request(method, self.target.url + path.lstrip("/"), **kw)

    def start_kernel(self, env=None, expect=201):
        body = {} if env is None else {"env": env}
        r = self.api("POST", "api/kernels", json=body)
        assert r.status_code == expect, (self.name, r.status_code, r.text)
        return r.json()

    def execute(self, kid, code):
        r = self.api("POST", "api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60})
        assert r.status_code == 200, (r.status_code, r.text)
        return r.json()


def stdout_of(rep):
    return "".join(o.get("text", "") for o in rep["outputs"] if o.get("name") == "stdout")


@pytest.fixture(scope="module")
def school():
    tokens = {}

    def add_users(t):
        tokens["alice"] = t.add_user("alice", "--max-kernels", "1")
        tokens["bob"] = t.add_user("bob")
        tokens["teacher"] = t.add_user("teacher", "--admin")
        # The admin's token doubles as --token, so the URL line check still holds.
        t.token = tokens["teacher"]
        t.http.headers["Authorization"] = "token " + t.token

    t = cellgate_target(pre_start=add_users)
    t.start()
    users = {name: User(t, name, tok) for name, tok in tokens.items()}
    yield t, users
    t.stop()


@pytest.fixture(scope="module")
def alice_kernel(school):
    t, users = school
    model = users["alice"].start_kernel()
    yield model["id"]
    users["alice"].api("DELETE", "api/kernels/" + model["id"])


def test_me_names_each_user(school):
    _, users = school
    for name, u in users.items():
        me = u.api("GET", "api/me")
        assert me.status_code == 200 and me.json()["name"] == name, me.text
    assert users["teacher"].api("GET", "api/me").json()["admin"] is True
    assert not users["bob"].api("GET", "api/me").json().get("admin")


def test_alice_kernel_is_404_for_bob_on_every_route(school, alice_kernel):
    _, users = school
    alice, bob = users["alice"], users["bob"]
    kid = alice_kernel
    assert alice.api("GET", "api/kernels/" + kid).status_code == 200
    routes = [("GET", "api/kernels/%s" % kid, None),
              ("POST", "api/kernels/%s/interrupt" % kid, {}),
              ("POST", "api/kernels/%s/restart" % kid, {}),
              ("POST", "api/kernels/%s/execute" % kid, {"code": "print(1)"}),
              ("POST", "api/kernels/%s/tools/read" % kid, {"path": "x"}),
              ("POST", "api/kernels/%s/tools/write" % kid, {"path": "x", "content": "y"}),
              ("POST", "api/kernels/%s/tools/edit" % kid,
               {"path": "x", "old_string": "a", "new_string": "b"}),
              ("POST", "api/kernels/%s/tools/exec" % kid, {"code": "print(1)"}),
              ("POST", "api/kernels/%s/tools/process" % kid, {"command": "true"}),
              ("DELETE", "api/kernels/%s" % kid, None)]
    for method, path, body in routes:
        r = bob.api(method, path, json=body)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
    missing = bob.api("GET", "api/kernels/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    other = bob.api("GET", "api/kernels/" + kid).json()
    # ids are no oracle: the answer for alice's kernel is the one for a kernel that never existed.
    assert other["reason"] == missing.json()["reason"]
    assert other["message"].replace(kid, "ID") == missing.json()["message"].replace(
        "00000000-0000-0000-0000-000000000000", "ID"), (other, missing.json())
    assert kid not in [k["id"] for k in bob.api("GET", "api/kernels").json()]
    assert kid in [k["id"] for k in alice.api("GET", "api/kernels").json()]
    # Still alive for alice after bob's DELETE attempt.
    assert alice.api("GET", "api/kernels/" + kid).status_code == 200

    with pytest.raises(websocket.WebSocketBadStatusException) as exc:
        KernelWS(bob.target.url, bob.token, kid)
    assert exc.value.status_code == 404
    ws = KernelWS(alice.target.url, alice.token, kid)
    ws.close()


def test_sessions_are_per_user(school, alice_kernel):
    _, users = school
    alice, bob = users["alice"], users["bob"]
    r = alice.api("POST", "api/sessions", json={"path": "a.ipynb", "type": "notebook",
                                                 "name": "a", "kernel": {"id": alice_kernel}})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.json()["kernel"]["id"] == alice_kernel
    assert bob.api("GET", "api/sessions/" + sid).status_code == 404
    assert bob.api("PATCH", "api/sessions/" + sid, json={"path": "b.ipynb"}).status_code == 404
    assert bob.api("DELETE", "api/sessions/" + sid).status_code == 404
    assert sid not in [s["id"] for s in bob.api("GET", "api/sessions").json()]
    assert sid in [s["id"] for s in alice.api("GET", "api/sessions").json()]
    # Bob cannot attach a session of his own to alice's kernel either.
    r = bob.api("POST", "api/sessions", json={"path": "b.ipynb", "type": "notebook",
                                               "name": "b", "kernel": {"id": alice_kernel}})
    assert r.status_code == 404, r.text
    assert alice.api("GET", "api/sessions/" + sid).status_code == 200


def test_workspaces_are_per_user(school, alice_kernel):
    _, users = school
    alice, bob = users["alice"], users["bob"]
    rep = alice.execute(alice_kernel, "open('alice_secret.txt', 'w').write('for alice only')")
    assert rep["status"] == "ok", rep
    got = alice.api("GET", "api/workspaces/default/files/alice_secret.txt")
    assert got.status_code == 200 and got.content == b"for alice only"
    r = bob.api("GET", "api/workspaces/default/files/alice_secret.txt")
    assert r.status_code == 404, r.text
    assert b"for alice only" not in r.content
    for snap in alice.api("GET", "api/workspaces/default/snapshots").json():
        r = bob.api("GET", "api/workspaces/default/snapshots/" + snap["id"])
        assert r.status_code == 404 and "alice_secret" not in r.text, r.text


def test_quota_max_kernels(school, alice_kernel):
    _, users = school
    r = users["alice"].api("POST", "api/kernels", json={})
    assert r.status_code == 403, (r.status_code, r.text)
    assert "max_kernels" in r.json()["message"], r.json()
    assert len(users["alice"].api("GET", "api/kernels").json()) == 1


def test_admin_sees_all_kernels(school, alice_kernel):
    _, users = school
    bob_kid = users["bob"].start_kernel()["id"]
    try:
        seen = [k["id"] for k in users["teacher"].api("GET", "api/kernels").json()]
        assert alice_kernel in seen and bob_kid in seen, seen
        assert users["teacher"].api("GET", "api/kernels/" + alice_kernel).status_code == 200
        assert alice_kernel not in [k["id"] for k in users["bob"].api("GET", "api/kernels").json()]
    finally:
        users["bob"].api("DELETE", "api/kernels/" + bob_kid)


def test_kernel_username_is_the_real_user(school):
    _, users = school
    bob = users["bob"]
    kid = bob.start_kernel(env={"KERNEL_USERNAME": "alice"})["id"]
    try:
        rep = bob.execute(kid, "import os\nprint(os.environ.get('KERNEL_USERNAME'))")
        assert rep["status"] == "ok", rep
        assert stdout_of(rep).strip() == "bob", rep
    finally:
        bob.api("DELETE", "api/kernels/" + kid)


def restart_keeps_kernel(stop_gateway):
    t = cellgate_target()
    t.start()
    try:
        kid = t.start_kernel()["id"]
        r = t.post("api/kernels/%s/execute" % kid, json={"code": "x = 7"})
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        stop_gateway(t)
        t.start()
        listed = [k["id"] for k in t.get("api/kernels").json()]
        assert kid in listed, (kid, listed, t.log_tail())
        r = t.post("api/kernels/%s/execute" % kid, json={"code": "print(x)", "timeout": 60})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "ok", r.json()
        assert stdout_of(r.json()).strip() == "7", r.json()
    finally:
        t.stop()


def test_restart_without_loss_after_sigterm():
    restart_keeps_kernel(lambda t: t.terminate_gateway())


def test_restart_without_loss_after_crash():
    def crash(t):
        t.proc.kill()  # SIGKILL: no cleanup at all, as in a crash
        t.proc.wait(30)
        t.proc = None
        t.url = None
    restart_keeps_kernel(crash)


def test_idle_kernel_is_culled():
    t = cellgate_target(extra_args=["--cull-idle-timeout", "2", "--cull-interval", "1"])
    t.start()
    try:
        kid = t.start_kernel()["id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if kid not in [k["id"] for k in t.get("api/kernels").json()]:
                break
            time.sleep(0.5)
        else:
            pytest.fail("idle kernel %s still listed after 30 s:\n%s" % (kid, t.log_tail()))
        assert t.get("api/kernels/" + kid).status_code == 404
    finally:
        t.stop()


def test_kernelspec_limits_reach_the_jail_cgroup():
    """metadata.cellgate in a kernelspec sets that kernel's limits (read back from its cgroup)."""
    if os.environ.get("CELLGATE_TEST_SPAWNER", "plain") != "jail":
        pytest.skip("limits are enforced by the jail's cgroups; this run uses the plain spawner")

    def add_spec(t):
        d = os.path.join(t.kernels_dir, "limited")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump({"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "limited", "language": "python",
                       "metadata": {"cellgate": {"pids": 77}}}, f)

    t = cellgate_target(pre_start=add_spec)
    t.start()
    try:
        kid = t.start_kernel(name="limited")["id"]
        candidates = ["/sys/fs/cgroup/pids/cellgate/%s/pids.max" % kid,
                      "/sys/fs/cgroup/cellgate/%s/pids.max" % kid]
        found = [p for p in candidates if os.path.exists(p)]
        assert found, "no pids cgroup for the kernel among %s" % candidates
        with open(found[0]) as f:
            assert f.read().strip() == "77"
        t.delete_kernel(kid)
    finally:
        t.stop()
