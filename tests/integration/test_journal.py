# SPDX-License-Identifier: Apache-2.0
# The execution journal (issue 24): every execution path recorded with who ran it, the outputs (large
# ones in the store), restarts and gateway crashes marked, the nbformat export (validated by Debian's
# nbformat), retention charged to the owner, and another user's 404 on every journal route.
import json
import os
import subprocess
import time

import pytest

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="the journal is a cellgate extension")

NBFORMAT_PYTHON = "/usr/bin/python3"  # Debian's, with python3-nbformat


class User(targets_mod.TokenClient):
    def start_kernel(self):
        r = self.api("POST", "api/kernels", json={})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def execute(self, kid, code, **headers):
        r = self.api("POST", "api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60}, headers=headers)
        assert r.status_code == 200, r.text
        return r.json()

    def journal(self, kid, **params):
        r = self.api("GET", "api/kernels/%s/journal" % kid, params=params)
        assert r.status_code == 200, r.text
        return r.json()


def cellgate(*extra):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    tokens = {}

    def add_users(t):
        tokens["alice"] = t.add_user("alice")
        tokens["bob"] = t.add_user("bob")
        tokens["teacher"] = t.add_user("teacher", "--admin")
        t.token = tokens["teacher"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.make_target("cellgate", extra_args=list(extra), pre_start=add_users)
    t.start()
    return t, {name: User(t, name, tok) for name, tok in tokens.items()}


@pytest.fixture(scope="module")
def gw():
    t, users = cellgate()
    yield t, users
    t.stop()


def executions(journal):
    return [e for e in journal["entries"] if e["kind"] == "execute"]


def stdout(entry):
    return "".join(o.get("text", "") for o in entry["outputs"] if o.get("name") == "stdout")


def mcp_call(user, tool, args):
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = user.api("POST", "mcp", headers=h, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert init.status_code == 200, init.text
    h["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
    user.api("POST", "mcp", headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    r = user.api("POST", "mcp", headers=h, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                "params": {"name": tool, "arguments": args}})
    assert r.status_code == 200, r.text
    return r.json()["result"]


def validate_notebook(text):
    """nbformat's own validator (Debian's python3-nbformat): raises on an invalid notebook."""
    out = subprocess.run([NBFORMAT_PYTHON, "-c",
                          "import sys, nbformat\n"
                          "nb = nbformat.reads(sys.stdin.read(), as_version=nbformat.NO_CONVERT)\n"
                          "nbformat.validate(nb)\n"
                          "print(nb.nbformat, nb.nbformat_minor, len(nb.cells))\n"],
                         input=text.encode(), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().split()


def test_every_path_is_recorded_with_who_ran_it(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    ws = KernelWS(t.url, alice.token, kid)
    try:
        assert ws.execute("x = 21\nprint('by websocket')").reply["content"]["status"] == "ok"
        assert ws.execute("secret_silent = 1", silent=True).reply["content"]["status"] == "ok"
        session = ws.session_id
    finally:
        ws.close()
    assert alice.execute(kid, "print('by rest', x * 2)")["status"] == "ok"
    r = alice.api("POST", "api/kernels/%s/tools/exec" % kid, json={"code": "print('by tools')"})
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text
    res = mcp_call(alice, "execute", {"kernel_id": kid, "code": "print('by mcp')"})
    assert not res.get("isError"), res
    assert alice.execute(kid, "1/0")["status"] == "error"

    j = alice.journal(kid)
    assert j["kernel_id"] == kid and j["owner"] == "alice" and j["kernelspec"]
    ex = executions(j)
    assert [e["client"] for e in ex] == ["websocket", "websocket", "execute", "tools", "mcp", "execute"], ex
    assert all(e["user"] == "alice" for e in ex), ex
    assert ex[0]["session"] == session
    assert ex[0]["code"] == "x = 21\nprint('by websocket')" and stdout(ex[0]) == "by websocket\n"
    assert ex[1]["silent"] is True and ex[1]["code"] == "secret_silent = 1"
    assert stdout(ex[2]) == "by rest 42\n" and stdout(ex[3]) == "by tools\n" and stdout(ex[4]) == "by mcp\n"
    assert [e["status"] for e in ex] == ["ok", "ok", "ok", "ok", "ok", "error"]
    assert ex[5]["outputs"][-1]["output_type"] == "error" and ex[5]["outputs"][-1]["ename"] == "ZeroDivisionError"
    counts = [e["execution_count"] for e in ex if not e["silent"]]
    assert counts == sorted(counts) and len(set(counts)) == len(counts), counts
    for e in ex:
        assert e["started"] and e["ended"] and e["started"] <= e["ended"], e
        if not e["silent"]:
            assert e["snapshot_after"], e  # the workspace's snapshot after it ran
    assert ex[0]["snapshot_before"] == j["baseline"] != "", (ex[0], j)
    # The MCP tool reads the same journal; another user's MCP call gets the 404.
    text = "\n".join(c.get("text", "") for c in mcp_call(alice, "journal", {"kernel_id": kid})["content"])
    assert "via mcp" in text and "print('by mcp')" in text and "by tools" in text, text
    assert mcp_call(users["bob"], "journal", {"kernel_id": kid}).get("isError") is True
    # ?since= pages: only what comes after.
    later = alice.journal(kid, since=ex[3]["seq"])
    assert [e["seq"] for e in later["entries"]] == [e["seq"] for e in j["entries"] if e["seq"] > ex[3]["seq"]]
    # The rows are what the state database holds.
    rows = t.db_query("SELECT client, run_by FROM journal_entries WHERE kernel_id = ? ORDER BY seq", kid)
    assert [r[0] for r in rows if r[0] not in ("gateway",)][:6] == [e["client"] for e in ex]


def test_notebook_export_is_valid_nbformat(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('hello')")
    alice.execute(kid, "from IPython.display import display, HTML\ndisplay(HTML('<b>bold</b>'))\n6 * 7")
    alice.execute(kid, "import sys; sys.stderr.write('warn\\n'); raise ValueError('nope')")
    r = alice.api("POST", "api/kernels/%s/restart" % kid)
    assert r.status_code == 200, r.text
    alice.execute(kid, "print('after restart')")
    r = alice.api("GET", "api/kernels/%s/journal.ipynb" % kid)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/x-ipynb+json")
    major, minor, ncells = validate_notebook(r.text)
    assert (major, minor) == ("4", "5")
    nb = r.json()
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    marks = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert [c["source"] for c in code] == ["print('hello')",
                                           "from IPython.display import display, HTML\ndisplay(HTML('<b>bold</b>'))\n6 * 7",
                                           "import sys; sys.stderr.write('warn\\n'); raise ValueError('nope')",
                                           "print('after restart')"]
    assert code[0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hello\n"}]
    kinds = [o["output_type"] for o in code[1]["outputs"]]
    assert kinds == ["display_data", "execute_result"], code[1]["outputs"]
    assert code[1]["outputs"][1]["data"]["text/plain"] == "42"
    assert [o["output_type"] for o in code[2]["outputs"]][-1] == "error"
    assert code[3]["execution_count"] == 1  # counted from 1 again after the restart
    assert any("Kernel restarted" in m["source"] for m in marks), marks
    for c in code:
        md = c["metadata"]["cellgate"]
        assert md["user"] == "alice" and md["client"] == "execute" and md["snapshot"], md
    assert nb["metadata"]["kernelspec"]["name"] and nb["metadata"]["cellgate"]["kernel_id"] == kid


def test_large_outputs_go_to_the_store(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('y' * 100000)")
    ex = executions(alice.journal(kid))
    assert stdout(ex[-1]) == "y" * 100000 + "\n"
    rows = t.db_query("SELECT kind, outputs, blobs FROM journal_entries WHERE kernel_id = ?", kid)
    assert [r[0] for r in rows] == ["execute"], rows
    (_, outputs, blobs), = rows
    assert "y" * 1000 not in outputs and len(outputs) < 4000, outputs[:200]
    hashes = [o["content_sha256"] for o in json.loads(outputs) if "content_sha256" in o]
    assert hashes and " ".join(hashes) == blobs, (outputs, blobs)


def test_another_user_gets_404_on_everything(gw):
    t, users = gw
    alice, bob, teacher = users["alice"], users["bob"], users["teacher"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('alice only')")
    never = "00000000-0000-4000-8000-00000000dead"
    for method, path in (("GET", "journal"), ("GET", "journal.ipynb"), ("DELETE", "journal")):
        mine = bob.api(method, "api/kernels/%s/%s" % (kid, path))
        missing = bob.api(method, "api/kernels/%s/%s" % (never, path))
        assert mine.status_code == missing.status_code == 404, (path, mine.text)
        assert mine.json()["reason"] == missing.json()["reason"] and "alice only" not in mine.text
    assert kid not in [j["kernel_id"] for j in bob.api("GET", "api/journals").json()]
    assert kid in [j["kernel_id"] for j in alice.api("GET", "api/journals").json()]
    # An admin sees it.
    assert teacher.api("GET", "api/kernels/%s/journal" % kid).status_code == 200
    assert kid in [j["kernel_id"] for j in teacher.api("GET", "api/journals", params={"owner": "alice"}).json()]
    # Without a token: 401, before anything is parsed.
    r = targets_mod.requests.get(t.url + "api/kernels/%s/journal" % kid, timeout=30)
    assert r.status_code == 401


def test_bad_requests_get_a_reason(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    for params in ({"since": "abc"}, {"since": "-1"}, {"limit": "0"}, {"limit": "99999999"}, {"since": "1e3"}):
        r = alice.api("GET", "api/kernels/%s/journal" % kid, params=params)
        assert r.status_code == 400, (params, r.text)
        body = r.json()
        assert body["reason"] and body["message"], body
    r = alice.api("GET", "api/kernels/%s/journal.ipynb" % kid, params={"since": "x"})
    assert r.status_code == 400 and r.json()["message"]
    assert alice.api("GET", "api/kernels/%s/journal" % kid).status_code == 200  # still serving


def test_a_deleted_kernel_keeps_its_journal_until_the_owner_deletes_it(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('before delete')")
    assert alice.api("DELETE", "api/kernels/" + kid).status_code == 204
    j = alice.journal(kid)
    assert j["deleted"] and stdout(executions(j)[-1]) == "before delete\n"
    r = alice.api("GET", "api/kernels/%s/journal.ipynb" % kid)
    assert r.status_code == 200
    validate_notebook(r.text)
    assert alice.api("DELETE", "api/kernels/%s/journal" % kid).status_code == 204
    assert alice.api("GET", "api/kernels/%s/journal" % kid).status_code == 404
    assert t.db_query("SELECT count(*) FROM journal_entries WHERE kernel_id = ?", kid) == [(0,)]


def test_a_live_kernels_journal_deleted_by_its_owner_records_on(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('forget me')")
    assert alice.api("DELETE", "api/kernels/%s/journal" % kid).status_code == 204
    alice.execute(kid, "print('kept')")
    ex = executions(alice.journal(kid))
    assert [stdout(e) for e in ex] == ["kept\n"], ex


def test_journal_survives_a_kernel_restart_and_a_gateway_kill_9():
    t, users = cellgate()
    try:
        alice = users["alice"]
        kid = alice.start_kernel()
        alice.execute(kid, "x = 1\nprint('one')")
        assert alice.api("POST", "api/kernels/%s/restart" % kid).status_code == 200
        alice.execute(kid, "x = 2\nprint('two')")
        time.sleep(0.5)  # a batch is written within 100 ms: what the crash may lose is that much
        t.kill_gateway()
        t.start()
        alice = User(t, "alice", alice.token)
        assert alice.execute(kid, "print('three', x)")["status"] == "ok"
        j = alice.journal(kid)
        kinds = [e["kind"] for e in j["entries"]]
        assert kinds.count("restart") == 1 and kinds.count("gateway_restart") == 1, kinds
        assert kinds.index("restart") < kinds.index("gateway_restart"), kinds
        ex = executions(j)
        assert [stdout(e) for e in ex] == ["one\n", "two\n", "three 2\n"], ex
        seqs = [e["seq"] for e in j["entries"]]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        gw_restart = [e for e in j["entries"] if e["kind"] == "gateway_restart"][0]
        assert "kept running" in gw_restart["reason"], gw_restart
    finally:
        t.stop()


def test_retention_charges_the_owner_and_keeps_others_entries():
    t, users = cellgate("--journal-bytes", "64K")
    try:
        alice, bob = users["alice"], users["bob"]
        bk = bob.start_kernel()
        bob.execute(bk, "print('bob keeps this')")
        ak = alice.start_kernel()
        for i in range(30):
            alice.execute(ak, "print(%d, 'z' * 3000)" % i)
        ex = executions(alice.journal(ak))  # committed; retention runs after each batch
        time.sleep(1)
        used = t.db_query("SELECT sum(bytes) FROM journal_entries WHERE owner = 'alice'")[0][0]
        assert used <= 64 * 1024, used
        assert ex and ex[-1]["code"].startswith("print(29,") and not ex[0]["code"].startswith("print(0,"), \
            [e["code"][:10] for e in ex]
        assert [stdout(e) for e in executions(bob.journal(bk))] == ["bob keeps this\n"]
    finally:
        t.stop()


def test_the_baseline_snapshot_is_charged_to_the_journal_bytes():
    """A journal's baseline snapshot holds the workspace: it counts against --journal-bytes like the
    entries, so a workspace larger than the bound cannot be kept by the journal past it."""
    t, users = cellgate("--journal-bytes", "64K")
    try:
        alice = users["alice"]
        k1 = alice.start_kernel()
        alice.execute(k1, "import os; open('big.bin', 'wb').write(os.urandom(256 * 1024))")
        k2 = alice.start_kernel()  # the same workspace: its baseline holds big.bin
        alice.execute(k2, "print('after')")
        alice.journal(k2)  # committed; retention runs after each batch
        time.sleep(1)
        j = alice.journal(k2)
        assert j["baseline"] == "" and "journal_bytes" in j["note"], (j["baseline"], j["note"])
        used = t.db_query("SELECT (SELECT coalesce(sum(bytes), 0) FROM journal_entries WHERE owner = 'alice') + "
                          "(SELECT coalesce(sum(baseline_bytes), 0) FROM journals WHERE owner = 'alice')")[0][0]
        assert used <= 64 * 1024, used
        # The snapshot itself is gone from the store's index, and the journal records on.
        assert t.db_query("SELECT count(*) FROM snapshots WHERE label = ?", "journal " + k2)[0][0] == 0
        assert [stdout(e) for e in executions(j)] == ["after\n"]
        r = alice.api("POST", "api/kernels/%s/journal/reproduce" % k2, json={})
        assert r.status_code == 409 and "journal_bytes" in r.json()["message"], r.text
    finally:
        t.stop()


def refuse_kernel_rows(t, owner):
    """The state database refuses new kernel rows of owner (a trigger), as a full disk or a lost server
    would: the gateway's write fails and nothing else about the start is at fault."""
    if t.database:  # PostgreSQL
        t.db_query("CREATE FUNCTION refuse_kernel_row() RETURNS trigger AS $$ BEGIN "
                   "RAISE EXCEPTION 'test: kernel rows refused'; END $$ LANGUAGE plpgsql")
        t.db_query("CREATE TRIGGER refuse_kernel_row BEFORE INSERT ON kernels FOR EACH ROW "
                   "WHEN (NEW.owner = '%s') EXECUTE FUNCTION refuse_kernel_row()" % owner)
    else:
        t.db_query("CREATE TRIGGER refuse_kernel_row BEFORE INSERT ON kernels WHEN NEW.owner = '%s' "
                   "BEGIN SELECT RAISE(ABORT, 'test: kernel rows refused'); END" % owner)


def test_a_start_whose_kernel_row_fails_leaves_no_open_journal():
    """A cold start whose kernel row cannot be written is no kernel: it must leave no journal that
    says a kernel lives (such a journal was never closed, listed as live and kept by retention for good)."""
    t, users = cellgate()
    try:
        alice = users["alice"]
        refuse_kernel_rows(t, "alice")
        r = alice.api("POST", "api/kernels", json={})
        assert r.status_code != 201 and "kernel rows refused" in r.json()["message"], r.text
        live = {k["id"] for k in alice.api("GET", "api/kernels").json()}
        journals = alice.api("GET", "api/journals").json()  # after the writer's sync
        open_without_kernel = [j for j in journals if j["deleted"] == "" and j["kernel_id"] not in live]
        assert open_without_kernel == [], open_without_kernel
        # The gateway serves on, and the next start records its journal.
        t.db_query("DROP TRIGGER refuse_kernel_row" + (" ON kernels" if t.database else ""))
        kid = alice.start_kernel()
        alice.execute(kid, "print('recorded')")
        assert [stdout(e) for e in executions(alice.journal(kid))] == ["recorded\n"]
    finally:
        t.stop()


NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks")


def code_cells(path):
    with open(path) as f:
        nb = json.load(f)
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


def test_reproduce_the_data_analysis_notebook_matches(gw):
    t, users = gw
    alice = users["alice"]
    r = alice.api("POST", "api/workspaces", json={"name": "repro-data"})
    assert r.status_code == 201, r.text
    with open(os.path.join(NOTEBOOKS, "sales.csv"), "rb") as f:
        r = alice.api("PUT", "api/workspaces/repro-data/files/sales.csv", data=f.read())
    assert r.status_code in (200, 201), r.text
    r = alice.api("POST", "api/kernels", json={"workspace": "repro-data"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    for code in code_cells(os.path.join(NOTEBOOKS, "data-analysis.ipynb")):
        assert alice.execute(kid, code)["status"] == "ok", code
    # The cell after the recording changes the file: the reproduction starts from the baseline anyway.
    alice.execute(kid, "open('sales.csv', 'w').write('broken')")
    r = alice.api("POST", "api/kernels/%s/journal/reproduce" % kid, json={})
    assert r.status_code == 200, r.text
    rep = r.json()
    assert rep["first_divergence"] is None and rep["diverged"] == 0, json.dumps(rep, indent=1)[:4000]
    runs = [c for c in rep["cells"] if c["kind"] == "execute"]
    assert len(runs) == 5 and all(c["match"] is True for c in runs), runs
    kinds = {o["output_type"] for e in executions(alice.journal(kid)) for o in e["outputs"]}
    assert "display_data" in kinds  # the figure, compared by its hash
    # The reproduction's kernel and workspace are gone, and it is not itself journalled.
    assert rep["reproduced_on"]["kernel_id"] not in [k["id"] for k in alice.api("GET", "api/kernels").json()]
    assert rep["reproduced_on"]["workspace"] not in [w["name"] for w in alice.api("GET", "api/workspaces").json()]
    assert alice.api("GET", "api/kernels/%s/journal" % rep["reproduced_on"]["kernel_id"]).status_code == 404


def test_reproduce_names_the_cell_that_uses_random_without_a_seed(gw):
    t, users = gw
    alice = users["alice"]
    kid = alice.start_kernel()
    alice.execute(kid, "import random\nprint('start', 0x1f)")
    alice.execute(kid, "print(object())")  # a memory address: normalised, so it matches
    alice.execute(kid, "print(random.random())")
    alice.execute(kid, "print('after')")
    seqs = [e["seq"] for e in executions(alice.journal(kid))]
    r = alice.api("POST", "api/kernels/%s/journal/reproduce" % kid, json={"upto": seqs[3]})
    assert r.status_code == 200, r.text
    rep = r.json()
    assert rep["first_divergence"] == seqs[2], json.dumps(rep, indent=1)
    by_seq = {c["seq"]: c for c in rep["cells"]}
    assert by_seq[seqs[0]]["match"] is True and by_seq[seqs[1]]["match"] is True
    assert by_seq[seqs[2]]["match"] is False and by_seq[seqs[2]]["recorded"] != by_seq[seqs[2]]["reproduced"]
    assert by_seq[seqs[3]]["match"] is True
    # upto stops early.
    r = alice.api("POST", "api/kernels/%s/journal/reproduce" % kid, json={"upto": seqs[1]})
    assert r.status_code == 200 and r.json()["first_divergence"] is None, r.text
    for body in ({"upto": 0}, {"upto": "x"}, {"nope": 1}, [1]):
        r = alice.api("POST", "api/kernels/%s/journal/reproduce" % kid, json=body)
        assert r.status_code == 400 and r.json()["message"], (body, r.text)
    assert users["bob"].api("POST", "api/kernels/%s/journal/reproduce" % kid, json={}).status_code == 404


def reproduce_cli(t, token, *args):
    """`cellgate reproduce` against the running gateway, as a user would run it."""
    env = dict(os.environ, CELLGATE_URL=t.url, CELLGATE_TOKEN=token)
    return subprocess.run([t.binary, "reproduce", *args], capture_output=True, text=True, timeout=300, env=env)


def test_cellgate_reproduce_names_the_divergence_and_exits_1(gw):
    t, users = gw
    alice, bob = users["alice"], users["bob"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('fixed', 6 * 7)")
    alice.execute(kid, "import random\nprint(random.random())")
    seqs = [e["seq"] for e in executions(alice.journal(kid))]
    out = reproduce_cli(t, alice.token, kid)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "[%d] match" % seqs[0] in out.stdout and "[%d] DIVERGED" % seqs[1] in out.stdout, out.stdout
    assert "first divergence: entry %d" % seqs[1] in out.stdout and "random.random()" in out.stdout, out.stdout
    # Up to the cell that matches: exit 0; --json is the gateway's answer.
    out = reproduce_cli(t, alice.token, kid, "--upto", str(seqs[0]), "--json")
    assert out.returncode == 0, (out.stdout, out.stderr)
    rep = json.loads(out.stdout)
    assert rep["first_divergence"] is None and rep["matched"] == 1, rep
    # Another user's token: the 404 of a journal that never existed, one line, exit 2.
    out = reproduce_cli(t, bob.token, kid)
    assert out.returncode == 2 and "404" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stdout == ""
    # Bad arguments: one line each, exit 2, nothing run.
    for args in ([], [kid, "--upto", "0"], [kid, "--upto", "x"], [kid, "--nope", "1"], [kid, kid]):
        out = reproduce_cli(t, alice.token, *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)


def test_a_user_cannot_list_another_users_journals_by_asking(gw):
    t, users = gw
    alice, bob = users["alice"], users["bob"]
    kid = alice.start_kernel()
    alice.execute(kid, "print('mine')")
    for params in ({"owner": "alice"}, {"owner": ""}, {"owner": "*"}):
        r = bob.api("GET", "api/journals", params=params)
        assert r.status_code == 200 and kid not in [j["kernel_id"] for j in r.json()], (params, r.text)
    # The admin's view of alice names her kernel; bob's own list stays his.
    assert kid in [j["kernel_id"] for j in users["teacher"].api("GET", "api/journals", params={"owner": "alice"}).json()]
    assert all(j["owner"] == "bob" for j in bob.api("GET", "api/journals").json())
