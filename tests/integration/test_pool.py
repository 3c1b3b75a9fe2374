# SPDX-License-Identifier: Apache-2.0
# The warm pool behind POST /api/kernels: a claim gets its owner's workspace (mounted into the
# running jail), limits, env and cwd; one owner, once; the pool refills; cold start when it can't.
import json
import os
import threading
import time

import pytest

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="the pool is a cellgate extension")

SPEC = "python3"


class User(targets_mod.TokenClient):
    def start_kernel(self, **body):
        body.setdefault("name", SPEC)
        r = self.api("POST", "api/kernels", json=body)
        assert r.status_code == 201, (self.name, r.status_code, r.text)
        return r.json()

    def ws(self, kid):
        return KernelWS(self.target.url, self.token, kid)


def make_gateway(*args, users=("alice", "bob")):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    if os.geteuid() != 0:
        pytest.skip("the jail needs root")
    tokens = {}

    def add_users(t):
        for u in users:
            flags = ["--memory", "768M"] if u == "alice" else []
            tokens[u] = t.add_user(u, *flags)
        tokens["admin"] = t.add_user("admin", "--admin")
        t.token = tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.make_target("cellgate", spawner="jail", pre_start=add_users, extra_args=list(args))
    t.start()
    return t, {u: User(t, u, tok) for u, tok in tokens.items()}


def pool_status(t):
    r = t.get("api/status")
    assert r.status_code == 200, r.text
    return r.json()["pool"][SPEC]


def wait_ready(t, n, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = pool_status(t)
        if s["ready"] >= n:
            return s
        time.sleep(0.3)
    raise AssertionError("pool never reached %d ready: %s\n%s" % (n, pool_status(t), t.log_tail()))


def claimed_from_pool(t, kid):
    """Whether the audit log says the kernel came out of the pool (and was not started cold)."""
    with open(os.path.join(t.data_dir, "audit.log")) as f:
        for line in f:
            e = json.loads(line)
            if e["action"] == "start" and e["object_id"] == kid and e["result"] == "ok":
                return e["detail"].get("pool") is True
    raise AssertionError("no start of %s in the audit log" % kid)


@pytest.fixture(scope="module")
def pooled():
    t, users = make_gateway("--pool", SPEC + "=2", "--allow-env", "PLAIN_VAR")
    wait_ready(t, 2)
    yield t, users
    t.stop()


def test_pool_kernels_are_not_listed(pooled):
    t, users = pooled
    wait_ready(t, 2)
    # Not even to an admin, who sees every owned kernel.
    assert t.get("api/kernels").json() == []
    assert users["alice"].api("GET", "api/kernels").json() == []


def test_claim_gets_workspace_env_cwd_and_limits(pooled):
    t, users = pooled
    alice = users["alice"]
    wait_ready(t, 2)
    assert alice.api("POST", "api/workspaces", json={"name": "w1"}).status_code == 201
    r = alice.api("PUT", "api/workspaces/w1/files/hello.txt", data=b"hi from the api")
    assert r.status_code in (200, 201, 204), r.text
    k = alice.start_kernel(workspace="w1", env={"KERNEL_COURSE": "cs101"})
    kid = k["id"]
    assert k["name"] == SPEC and k["owner"] == "alice" and k["workspace"] == "w1"
    assert claimed_from_pool(t, kid)
    kws = alice.ws(kid)
    try:
        r = kws.execute("import os\nprint(os.getcwd())\nprint(open('hello.txt').read())\n"
                        "print(os.environ['KERNEL_COURSE'], os.environ['KERNEL_USERNAME'], "
                        "os.environ['KERNEL_WORKSPACE'], os.environ['KERNEL_ID'])\n"
                        "open('from_kernel.txt', 'w').write('written inside')\n")
        assert r.reply["content"]["status"] == "ok", r.reply
        # The pool's warm-up and the claim's env/cwd executes are silent: the owner's first cell is In [1].
        assert r.reply["content"]["execution_count"] == 1, r.reply
        assert r.stdout().splitlines() == ["/workspace", "hi from the api", "cs101 alice w1 " + kid]
    finally:
        kws.close()
    got = alice.api("GET", "api/workspaces/w1/files/from_kernel.txt")
    assert got.status_code == 200 and got.content == b"written inside"
    # Files the kernel writes are stored as `sandbox` (1000) like a cold kernel's (idmapped mount).
    tree = os.path.join(t.data_dir, "workspaces", "alice", "w1", "tree")
    assert os.stat(os.path.join(tree, "from_kernel.txt")).st_uid == 1000
    # alice's own memory limit was written into the running jail's cgroup.
    status = json.load(open(os.path.join(t.run_dir, "s", kid, "jail.json")))
    rel = status["cgroup"].split("/cellgate/", 1)[1]  # pool/<leaf>: a pooled kernel stays under the pool's level
    assert rel.startswith("pool/"), rel
    limit = "/sys/fs/cgroup/memory/cellgate/%s/memory.limit_in_bytes" % rel
    if os.path.exists(limit):
        assert int(open(limit).read()) == 768 << 20
    else:
        assert int(open(os.path.join(status["cgroup"], "memory.max")).read()) == 768 << 20
    # Listed to its owner now, and to nobody else.
    assert [m["id"] for m in alice.api("GET", "api/kernels").json()] == [kid]
    assert users["bob"].api("GET", "api/kernels/" + kid).status_code == 404
    alice.api("DELETE", "api/kernels/" + kid)


def test_two_claims_never_share_and_users_get_their_own(pooled):
    t, users = pooled
    wait_ready(t, 2)
    out = {}

    def claim(name):
        out[name] = users[name].start_kernel()

    threads = [threading.Thread(target=claim, args=(n,)) for n in ("alice", "bob")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    a, b = out["alice"]["id"], out["bob"]["id"]
    assert a != b
    assert claimed_from_pool(t, a) and claimed_from_pool(t, b), t.log_tail(60)
    for name, kid in (("alice", a), ("bob", b)):
        kws = users[name].ws(kid)
        try:
            r = kws.execute("import os\nprint(os.environ['KERNEL_USERNAME'], sorted(os.listdir('.')))")
            user, listing = r.stdout().split(" ", 1)
            assert user == name
            # bob's default workspace does not hold alice's files (and the other way round).
            assert "hello.txt" not in listing
        finally:
            kws.close()
    # Once only: a deleted pooled kernel is gone for good, never handed out again.
    users["alice"].api("DELETE", "api/kernels/" + a)
    users["bob"].api("DELETE", "api/kernels/" + b)
    wait_ready(t, 2)
    again = users["bob"].start_kernel()
    assert again["id"] not in (a, b)
    users["bob"].api("DELETE", "api/kernels/" + again["id"])


def test_pool_refills(pooled):
    t, users = pooled
    wait_ready(t, 2)
    k = users["alice"].start_kernel()
    assert claimed_from_pool(t, k["id"])
    s = wait_ready(t, 2)
    assert s["ready"] == 2
    users["alice"].api("DELETE", "api/kernels/" + k["id"])


def test_env_it_cannot_apply_starts_cold(pooled):
    t, users = pooled
    wait_ready(t, 2)
    k = users["bob"].start_kernel(env={"PLAIN_VAR": "set at start"})
    assert not claimed_from_pool(t, k["id"])
    kws = users["bob"].ws(k["id"])
    try:
        assert kws.execute("import os\nprint(os.environ['PLAIN_VAR'])").stdout().strip() == "set at start"
    finally:
        kws.close()
    # The pooled kernels were left for others.
    assert pool_status(t)["ready"] == 2
    users["bob"].api("DELETE", "api/kernels/" + k["id"])


def test_empty_pool_falls_back_to_cold_start():
    # A memory budget no kernel fits in keeps the pool empty: every claim starts cold.
    t, users = make_gateway("--pool", SPEC + "=1", "--pool-max-memory", "1M", users=("bob",))
    try:
        time.sleep(2)
        s = pool_status(t)
        assert s["ready"] == 0 and s["starting"] == 0, s
        k = users["bob"].start_kernel()
        assert not claimed_from_pool(t, k["id"])
        kws = users["bob"].ws(k["id"])
        try:
            assert kws.execute("import os\nprint(os.getcwd())").stdout().strip() == "/workspace"
        finally:
            kws.close()
        users["bob"].api("DELETE", "api/kernels/" + k["id"])
    finally:
        t.stop()


def test_attach_workspace_only_once_and_never_through_symlinks(pooled, tmp_path):
    """The host-side mount into a claimed kernel's jail is refused a second time (its /workspace is no
    longer the placeholder), and for a path through a symlink."""
    import subprocess
    t, users = pooled
    wait_ready(t, 2)
    k = users["alice"].start_kernel()
    helper = os.path.join(os.path.dirname(t.binary), "cellgate-jail")
    status = os.path.join(t.run_dir, "s", k["id"], "jail.json")
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(str(other), str(tmp_path / "link"))
    listed = {m["id"] for m in t.get("api/kernels").json()}
    unclaimed = [os.path.join(t.run_dir, "s", d, "jail.json") for d in os.listdir(os.path.join(t.run_dir, "s"))
                 if d not in listed and os.path.exists(os.path.join(t.run_dir, "s", d, "jail.json"))
                 and json.load(open(os.path.join(t.run_dir, "s", d, "jail.json"))).get("state") == "running"]
    assert unclaimed, "no pooled jail found"
    try:
        for st, ws, why in ((status, str(other), "not the placeholder"),
                            (unclaimed[0], str(tmp_path / "link"), "symlink")):
            r = subprocess.run([helper, "--attach-workspace", st, "--workspace", ws],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 126 and why in r.stderr, (r.returncode, r.stderr)
        # Refused before anything on the host changed: the dir was not handed to the jail's uid.
        assert os.stat(str(other)).st_uid == 0
        kws = users["alice"].ws(k["id"])
        try:
            # Still the owner's workspace, not the other dir.
            r = kws.execute("import os\nprint(os.path.exists('/workspace/hello.txt') or os.listdir('/workspace'))")
            assert r.reply["content"]["status"] == "ok"
            (other / "marker").write_text("x")
            assert "marker" not in r.stdout()
            r = kws.execute("import os\nprint('marker' in os.listdir('/workspace'))")
            assert r.stdout().strip() == "False"
        finally:
            kws.close()
    finally:
        users["alice"].api("DELETE", "api/kernels/" + k["id"])


def pool_rows(t):
    """{kernel id: helper pid} of the unclaimed pool kernels the gateway recorded."""
    return dict(t.db_query("SELECT id, helper_pid FROM kernels WHERE owner = '@pool'"))


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_a_crashed_gateway_leaves_no_pool_kernel_behind():
    """Pool kernels outlive the gateway like every kernel; being nobody's, the next start shuts
    them down instead of leaking their jails, and fills a new pool."""
    t, users = make_gateway("--pool", SPEC + "=1", users=("bob",))
    try:
        wait_ready(t, 1)
        before = pool_rows(t)
        assert len(before) == 1 and all(pid > 0 for pid in before.values()), before
        t.kill_gateway()
        assert all(alive(pid) for pid in before.values()), "the pool kernel died with the gateway"
        t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(pid) for pid in before.values()):
            time.sleep(0.2)
        assert not any(alive(pid) for pid in before.values()), ("stale pool kernel still runs", t.log_tail())
        wait_ready(t, 1)
        after = pool_rows(t)
        assert len(after) == 1 and not set(after) & set(before), (before, after)
        listed = [k["id"] for k in t.get("api/kernels").json()]
        assert not set(listed) & set(before), listed
        # A claimed kernel is its owner's in the database, and no longer the pool's.
        k = users["bob"].start_kernel()
        assert claimed_from_pool(t, k["id"]) and k["id"] not in pool_rows(t)
    finally:
        t.stop()
