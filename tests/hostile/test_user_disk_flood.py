# SPDX-License-Identifier: Apache-2.0
# Hole 2 of issue 20, per user: each workspace has a live quota (--workspace-bytes, test_disk_flood),
# but a user with many workspaces (every kernel may have its own) could still fill the shared volume,
# N times the per-workspace cap. What all of a user's workspaces hold together is capped too
# (--user-workspace-bytes), at write time: EDQUOT inside the kernel, 507 naming the limit for an
# upload; another user still writes, and nothing already stored is lost.
import hostile as h
import targets as tm
from test_user_tables import with_users

MIB = 1 << 20
FILL = (
    "import errno, hashlib, os\n"
    "n = 0; err = ''; digest = hashlib.sha256()\n"
    "try:\n"
    "    with open('/workspace/fill.bin', 'wb') as f:\n"
    "        while n < (%d << 20):\n"
    "            block = os.urandom(1 << 20)\n"
    "            n += f.write(block)\n"
    "            digest.update(block)\n"
    "            f.flush()\n"
    "        os.fsync(f.fileno())\n"
    "except OSError as e:\n"
    "    err = errno.errorcode.get(e.errno, str(e.errno))\n"
    "print(n, err or '-', digest.hexdigest())\n")
DIGEST = "import hashlib; print(hashlib.sha256(open('/workspace/fill.bin', 'rb').read()).hexdigest())"


def run(client, kid, code):
    r = client.api("POST", "api/kernels/%s/execute" % kid, json={"code": code, "timeout": 300}, timeout=330)
    assert r.status_code == 200 and r.json()["status"] == "ok", (r.status_code, r.text[:500])
    return h.stdout_of(r.json()).strip()


def fill(client, kid, mib):
    n, err, digest = run(client, kid, FILL % mib).split()
    return int(n), ("" if err == "-" else err), digest


def kernel_in(client, workspace):
    r = client.api("POST", "api/kernels", json={"name": "python3", "workspace": workspace})
    assert r.status_code == 201, (r.status_code, r.text)
    return r.json()["id"]


def test_a_users_workspaces_together_cannot_fill_the_volume():
    t = h.jailed(workspace_bytes="64M", user_workspace_bytes="128M", workspace_volume="on")
    t.pre_start = with_users("alice", "bob")
    try:
        t.start()
        alice = tm.TokenClient(t, "alice", t.tokens["alice"])
        bob = tm.TokenClient(t, "bob", t.tokens["bob"])
        # Three kernels of alice, each in a workspace of its own, each writing under its 64 MiB quota:
        # 180 MiB together, past her 128 MiB.
        kids = [kernel_in(alice, "w%d" % i) for i in range(3)]
        results = [fill(alice, kid, 60) for kid in kids]
        print("alice's three kernels wrote (bytes, error): %s" % [(n, e) for n, e, _ in results])
        total = sum(n for n, _, _ in results)
        assert results[2][1] in ("EDQUOT", "ENOSPC"), (
            "alice's 3 workspaces took %d MiB together, past her 128 MiB (user_workspace_bytes), "
            "and no write failed" % (total >> 20))
        assert total <= 128 * MIB, total
        assert [(n, e) for n, e, _ in results[:2]] == [(60 * MIB, ""), (60 * MIB, "")], results

        # An upload into her full workspaces is refused with 507, naming the user's limit.
        r = alice.api("PUT", "api/workspaces/w2/files/upload.bin", data=b"y" * (8 * MIB))
        assert r.status_code == 507, (r.status_code, r.text)
        assert "user_workspace_bytes" in r.json()["message"], r.text

        # Another user writes as much as before: alice's cap is hers alone.
        other = kernel_in(bob, "default")
        n, err, _ = fill(bob, other, 60)
        assert (n, err) == (60 * MIB, ""), (n, err)

        # Nothing alice had stored is lost: the files her first two kernels wrote are whole.
        for kid, (n, _, digest) in zip(kids[:2], results[:2]):
            assert run(alice, kid, DIGEST) == digest, "a file alice stored before her cap was hit changed"
        r = alice.api("GET", "api/workspaces/w0/files/fill.bin")
        assert r.status_code == 200 and len(r.content) == 60 * MIB, (r.status_code, len(r.content))

        # Deleting gives the room back at once, to any of her workspaces.
        run(alice, kids[0], "import os; os.remove('/workspace/fill.bin')")
        n, err, _ = fill(alice, kids[2], 48)
        assert (n, err) == (48 * MIB, ""), (n, err)
        for kid in kids + [other]:
            t.delete_kernel(kid)
        assert t.get("api").status_code == 200
    finally:
        t.stop()
