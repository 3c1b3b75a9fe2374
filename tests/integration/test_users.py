# SPDX-License-Identifier: Apache-2.0
# Several users on one gateway: ownership (404 for others), quotas, admin view, restart, culling.
import glob
import json
import os
import time

import pytest
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


class User(targets_mod.TokenClient):
    """REST client with one user's token."""

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
    # The NDJSON variant of execute is served by its own code path.
    r = bob.api("POST", "api/kernels/%s/execute" % kid, json={"code": "print(1)"},
                headers={"Accept": "application/x-ndjson"})
    assert r.status_code == 404, (r.status_code, r.text)
    # /api/status counts only the caller's own kernels.
    assert bob.api("GET", "api/status").json()["kernels"] == 0
    assert alice.api("GET", "api/status").json()["kernels"] == 1
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


def mcp_session(user):
    """An MCP (streamable HTTP, /mcp) client with this user's token: returns call(tool, args) -> result."""
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = user.api("POST", "mcp", headers=h, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert init.status_code == 200, init.text
    h["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
    user.api("POST", "mcp", headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(tool, args):
        r = user.api("POST", "mcp", headers=h, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                    "params": {"name": tool, "arguments": args}})
        assert r.status_code == 200, r.text
        return r.json()["result"]
    call.headers = h  # for requests sent another way (with this session's id)
    return call


def mcp_text(result):
    return "\n".join(c.get("text", "") for c in result["content"])


def cell_waiting_for(name):
    """Code of a cell that ends once the file `name` exists in its workspace (at most a minute)."""
    return ("import os, time\n"
            "for _ in range(1200):\n"
            "    if os.path.exists(%r):\n"
            "        break\n"
            "    time.sleep(0.05)\n"
            "print('went' if os.path.exists(%r) else 'timed out')\n" % (name, name))


def wait_for_mcp_load(admin, want):
    """Polls GET /api/status until its `mcp` counters are `want`; returns the last seen."""
    for _ in range(300):
        load = admin.api("GET", "api/status").json()["mcp"]
        if load == want:
            break
        time.sleep(0.1)
    return load


def test_workspaces_and_snapshots_are_404_for_bob_on_every_route(school, alice_kernel):
    """alice's workspace "alice-ws" and its snapshot, through every workspace route, as bob."""
    _, users = school
    alice, bob = users["alice"], users["bob"]
    assert alice.api("POST", "api/workspaces", json={"name": "alice-ws"}).status_code == 201
    put = alice.api("PUT", "api/workspaces/alice-ws/files/secret.txt", data=b"alice's")
    assert put.status_code == 201, put.text
    snap = alice.api("POST", "api/workspaces/alice-ws/snapshots", json={"label": "mine"})
    assert snap.status_code == 201, snap.text
    sid = snap.json()["id"]
    ws = "api/workspaces/alice-ws"
    routes = [("GET", ws, None), ("DELETE", ws, None),
              ("GET", ws + "/files/secret.txt", None), ("GET", ws + "/files/", None),
              ("PUT", ws + "/files/secret.txt", b"bob's"), ("DELETE", ws + "/files/secret.txt", None),
              ("GET", ws + "/snapshots", None), ("POST", ws + "/snapshots", {"label": "bob"}),
              ("GET", ws + "/snapshots/" + sid, None), ("DELETE", ws + "/snapshots/" + sid, None),
              ("POST", ws + "/snapshots/%s/restore" % sid, {}),
              ("POST", ws + "/snapshots/%s/restore" % sid, {"to": "stolen"}),
              ("GET", ws + "/snapshots/%s/archive" % sid, None),
              ("GET", ws + "/diff?from=" + sid, None),
              # A non-admin's ?owner= is ignored: still bob's own (missing) workspace.
              ("GET", ws + "/files/secret.txt?owner=alice", None),
              ("GET", ws + "/snapshots?owner=alice", None)]
    for method, path, body in routes:
        kw = {"data": body} if isinstance(body, bytes) else {"json": body}
        r = bob.api(method, path, **kw)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert "alice's" not in r.text
    assert "alice-ws" not in [w["name"] for w in bob.api("GET", "api/workspaces").json()]
    assert "stolen" not in [w["name"] for w in bob.api("GET", "api/workspaces").json()]
    # Everything is still alice's, unchanged.
    assert alice.api("GET", ws + "/files/secret.txt").content == b"alice's"
    assert sid in [s["id"] for s in alice.api("GET", ws + "/snapshots").json()]
    # The admin reaches it with ?owner=.
    admin = users["teacher"]
    assert admin.api("GET", ws + "/files/secret.txt?owner=alice").content == b"alice's"


def test_mcp_tools_cannot_reach_another_users_kernel_or_workspace(school, alice_kernel):
    _, users = school
    call = mcp_session(users["bob"])
    listed = call("list_kernels", {})
    assert alice_kernel not in mcp_text(listed), listed
    for tool, args in [("execute", {"kernel_id": alice_kernel, "code": "print(1)"}),
                       ("read", {"kernel_id": alice_kernel, "path": "alice_secret.txt"}),
                       ("write", {"kernel_id": alice_kernel, "path": "x.txt", "content": "bob"}),
                       ("edit", {"kernel_id": alice_kernel, "path": "x.txt", "old_string": "a", "new_string": "b"}),
                       ("process", {"kernel_id": alice_kernel, "command": "true"}),
                       ("list_snapshots", {"workspace": "alice-ws"}),
                       ("publish_artifact", {"workspace": "alice-ws", "path": "x.txt"}),
                       ("snapshot", {"workspace": "alice-ws", "label": "bob"})]:
        result = call(tool, args)
        assert result.get("isError") is True, (tool, result)
        assert "404" in mcp_text(result), (tool, result)
    # alice's own MCP session does see her kernel.
    assert alice_kernel in mcp_text(mcp_session(users["alice"])("list_kernels", {}))


def test_one_users_slow_mcp_calls_leave_mcp_to_the_others(school):
    """bob's MCP executes that block (cells waiting for a file) run at most his share of /mcp at once, his
    further calls wait for his own to end, and another user's call is served meanwhile. With a small
    shared thread pool, alice's call would wait behind bob's cells, which only end when the test creates
    the file afterwards."""
    import threading
    _, users = school
    bob, alice, admin = users["bob"], users["alice"], users["teacher"]
    kid = bob.start_kernel()["id"]
    per_user, extra = 8, 32  # mcp_api.cc: kMaxMcpPerUser, kMaxMcpWaitingPerUser
    wait_for_go = cell_waiting_for('mcp_go.txt')
    results, threads = [], []

    def mcp_load():
        return admin.api("GET", "api/status").json()["mcp"]
    try:
        call = mcp_session(bob)
        threads += [threading.Thread(target=lambda: results.append(call("execute", {"kernel_id": kid, "code": wait_for_go})))
                    for _ in range(per_user + extra)]
        for th in threads:
            th.start()
        load = wait_for_mcp_load(admin, {"running": per_user, "waiting": extra})
        assert load == {"running": per_user, "waiting": extra}, load
        assert not results, "bob's cells ended before the file existed: %r" % results
        # One more of bob's would wait past the bound: refused at once.
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        r = bob.api("POST", "mcp", headers=h, json={"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert r.status_code == 503 and "at most 8 run at once, 32 wait" in r.json()["message"], r.text
        # alice is served while all of bob's calls still hold their threads or wait for his own.
        listed = mcp_session(alice)("list_kernels", {})
        assert kid not in mcp_text(listed), listed
        assert mcp_load() == {"running": per_user, "waiting": extra} and not results, results
    finally:
        put = bob.api("PUT", "api/workspaces/default/files/mcp_go.txt", data=b"go")
        assert put.status_code in (200, 201), put.text
        for th in threads:
            th.join(120)
        bob.api("DELETE", "api/kernels/" + kid)
    assert len(results) == per_user + extra
    assert all("went" in mcp_text(res) and not res.get("isError") for res in results), results
    assert mcp_load() == {"running": 0, "waiting": 0}


def test_a_waiting_mcp_call_whose_client_left_does_not_run(school):
    """A call that waits for its turn (its user runs the most at once) and whose client closes the
    connection meanwhile is dropped when its turn comes: its code never runs (a client that retried
    would otherwise run it twice). On the old gateway it ran once bob's cells ended."""
    import http.client
    import threading
    import urllib.parse
    _, users = school
    bob, admin = users["bob"], users["teacher"]
    kid = bob.start_kernel()["id"]
    per_user = 8  # mcp_api.cc: kMaxMcpPerUser
    wait_for_go = cell_waiting_for('left_go.txt')
    results, threads = [], []
    call = mcp_session(bob)
    try:
        threads += [threading.Thread(target=lambda: results.append(call("execute", {"kernel_id": kid, "code": wait_for_go})))
                    for _ in range(per_user)]
        for th in threads:
            th.start()
        load = wait_for_mcp_load(admin, {"running": per_user, "waiting": 0})
        assert load == {"running": per_user, "waiting": 0}, load
        # The ninth waits; its client sends it and leaves.
        url = urllib.parse.urlsplit(bob.target.url)
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "execute", "arguments": {"kernel_id": kid, "code": "open('left_ran.txt', 'w').write('ran')"}}})
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", url.path.rstrip("/") + "/mcp", body=body,
                     headers=dict(call.headers, Authorization="token " + bob.token))
        load = wait_for_mcp_load(admin, {"running": per_user, "waiting": 1})
        assert load == {"running": per_user, "waiting": 1}, load
        conn.close()
    finally:
        put = bob.api("PUT", "api/workspaces/default/files/left_go.txt", data=b"go")
        assert put.status_code in (200, 201), put.text
        for th in threads:
            th.join(120)
    assert len(results) == per_user and not any(r.get("isError") for r in results), results
    load = wait_for_mcp_load(admin, {"running": 0, "waiting": 0})
    assert load == {"running": 0, "waiting": 0}, load
    # Anything the kernel still had queued has run by now: an execute after it answers after it.
    assert "done" in mcp_text(mcp_session(bob)("execute", {"kernel_id": kid, "code": "print('done')"}))
    ran = bob.api("GET", "api/workspaces/default/files/left_ran.txt")
    assert ran.status_code == 404, "the call whose client had left ran: %s" % ran.text
    bob.api("DELETE", "api/kernels/" + kid)


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
    restart_keeps_kernel(lambda t: t.kill_gateway())


def test_sigkill_in_the_middle_of_an_execute():
    """The gateway dies while a cell runs: the kernel finishes it, and a restarted gateway re-adopts
    the kernel with the cell's effect in memory."""
    t = cellgate_target()
    t.start()
    try:
        kid = t.start_kernel()["id"]
        ws = KernelWS(t.url, t.token, kid)
        msg_id = ws.send("shell", "execute_request", {
            "code": "import time\ntime.sleep(3)\nx = 42", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        # The cell is running (busy for this request) before the gateway dies.
        ws.wait_for(lambda m: m.get("channel") == "iopub" and m["header"]["msg_type"] == "execute_input"
                    and m["parent_header"].get("msg_id") == msg_id, timeout=30)
        t.kill_gateway()  # SIGKILL: no cleanup at all, as in a crash
        ws.close()
        time.sleep(4)  # the cell finishes while no gateway runs
        t.start()
        listed = {k["id"]: k for k in t.get("api/kernels").json()}
        assert kid in listed, (kid, listed, t.log_tail())
        assert listed[kid]["execution_state"] != "dead", (listed[kid], t.log_tail())
        fresh = KernelWS(t.url, t.token, kid)  # a new client, new session_id
        try:
            res = fresh.execute("print(x == 42, x)")
            assert res.reply["content"]["status"] == "ok", res.reply
            out = "".join(m["content"].get("text", "") for m in res.iopub if m["header"]["msg_type"] == "stream")
            assert out.strip() == "True 42", res.iopub
        finally:
            fresh.close()
    finally:
        t.stop()


def snapshot_rows(t, ws="default"):
    r = t.get("api/workspaces/%s/snapshots" % ws)
    assert r.status_code == 200, r.text
    return r.json()


def db_exec(t, sql, *args):
    return t.db_query(sql, *args)


def test_snapshot_index_survives_restart_and_is_reconciled_with_the_store():
    # Without the journal, whose baseline (a labelled snapshot before the first execute) would be a
    # row of its own: this is about the index and the store, the rows it counts are the executes'.
    t = cellgate_target(extra_args=["--journal", "off"])
    t.start()
    try:
        kid = t.start_kernel()["id"]
        for i in range(3):
            r = t.post("api/kernels/%s/execute" % kid, json={"code": "open('f%d.txt', 'w').write('%d')" % (i, i)})
            assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        label = t.post("api/workspaces/default/snapshots", json={"label": "checkpoint"})
        assert label.status_code == 201, label.text
        before = snapshot_rows(t)
        assert len(before) == 4, before
        autos = [s for s in before if s["automatic"]]
        assert [s["kernel_id"] for s in autos] == [kid] * 3, autos
        assert [s["execution_count"] for s in autos] == [1, 2, 3], autos
        assert [s["added"] for s in autos] == [1, 1, 1], autos
        assert autos[0]["parent"] is None and autos[1]["parent"] == autos[0]["id"], autos
        assert before[-1]["label"] == "checkpoint" and before[-1]["kernel_id"] is None, before[-1]
        assert before[-1]["parent"] == autos[-1]["id"], before

        # The listing is the database's: a row deleted there disappears from it at once.
        gone = before[1]["id"]
        db_exec(t, "DELETE FROM snapshots WHERE snapshot_id = ?", gone)
        assert gone not in [s["id"] for s in snapshot_rows(t)]

        t.terminate_gateway()
        # While it is down: a snapshot vanishes from the store, and the database gains a row for a
        # snapshot (and a workspace) the store never had.
        dropped = before[2]["id"]  # not the head (the labelled one is)
        os.unlink(os.path.join(t.data_dir, "workspaces", "default", "default", "snapshots", dropped))
        db_exec(t, "INSERT INTO workspaces (owner, name, created) VALUES ('default', 'ghost', 'x')")
        db_exec(t, "INSERT INTO snapshots (owner, workspace, snapshot_id, created) VALUES "
                   "('default', 'ghost', '00000001-deadbeef', 'x')")
        db_exec(t, "INSERT INTO snapshots (owner, workspace, snapshot_id, created) VALUES "
                   "('default', 'default', '00000099-deadbeef', 'x')")
        t.start()
        after = snapshot_rows(t)
        ids = [s["id"] for s in after]
        assert dropped not in ids and "00000099-deadbeef" not in ids, after
        assert ids == [before[0]["id"], before[1]["id"], before[3]["id"]], (ids, before)
        # Rows that survived are unchanged; the rebuilt one has what the store knows (parent, counts).
        by_id = {s["id"]: s for s in after}
        for s in (before[0], before[3]):
            assert by_id[s["id"]] == s, (by_id[s["id"]], s)
        rebuilt = by_id[gone]
        assert rebuilt["parent"] == before[0]["id"] and rebuilt["kernel_id"] is None, rebuilt
        assert (rebuilt["added"], rebuilt["changed"], rebuilt["removed"]) == (1, 0, 0), rebuilt
        assert rebuilt["entries"] == before[1]["entries"] and rebuilt["bytes"] == before[1]["bytes"], rebuilt
        assert db_exec(t, "SELECT count(*) FROM snapshots WHERE workspace = 'ghost'") == [(0,)]
        assert db_exec(t, "SELECT count(*) FROM workspaces WHERE name = 'ghost'") == [(0,)]
        assert "snapshot index reconciled" in t.log_tail(200), t.log_tail()
        # Still a working index: the next execute's snapshot is listed, with the re-adopted kernel.
        r = t.post("api/kernels/%s/execute" % kid, json={"code": "open('f9.txt', 'w').write('9')"})
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        newest = snapshot_rows(t)[-1]
        assert newest["kernel_id"] == kid and newest["added"] == 1, newest
        deleted = t.api("DELETE", "api/workspaces/default/snapshots/" + newest["id"])
        assert deleted.status_code == 204, deleted.text
        assert newest["id"] not in [s["id"] for s in snapshot_rows(t)]
    finally:
        t.stop()


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
        candidates = ["/sys/fs/cgroup/pids/cellgate/*/%s/pids.max" % kid,
                      "/sys/fs/cgroup/cellgate/*/%s/pids.max" % kid]  # cellgate/<owner>/<kernel>
        found = [p for c in candidates for p in glob.glob(c)]
        assert found, "no pids cgroup for the kernel among %s" % candidates
        with open(found[0]) as f:
            assert f.read().strip() == "77"
        t.delete_kernel(kid)
    finally:
        t.stop()
