# SPDX-License-Identifier: Apache-2.0
# Hole 3 of issue 20: the snapshot store had no per-user cap: labelled snapshots and restores into new
# workspaces added to it without limit, and a sparse file was stored (and hashed) as if dense. With
# --store-bytes (per user too: `cellgate user set-limits --store-bytes`) a user's snapshots hold at most
# that much, and a sparse file costs what it holds.
import os

import hostile as h
import targets as tm

STORE = 48 << 20
NEW_CONTENT = "import os\nopen('/workspace/data.bin', 'wb').write(os.urandom(12 << 20))\n"


def store_bytes(t):
    return h.allocated_bytes(os.path.join(t.data_dir, "store"))


def test_labelled_snapshots_and_restores_stop_at_the_store_quota():
    t = h.jailed(store_bytes="48M")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        before = store_bytes(t)
        refused = None
        for i in range(12):  # 12 x 12 MiB of fresh content: far past the quota
            h.execute(t, kid, NEW_CONTENT)
            r = t.post("api/workspaces/default/snapshots", json={"label": "keep-%d" % i})
            if r.status_code != 201:
                refused = r
                break
        grown = store_bytes(t) - before
        print("store grew by %d bytes; refused: %s" % (grown, refused and refused.text))
        assert refused is not None, "12 labelled snapshots of 12 MiB each were all taken (store +%d bytes)" % grown
        assert refused.status_code == 507 and "store_bytes" in refused.json()["message"], refused.text
        assert grown <= STORE + (4 << 20), "the store grew by %d bytes" % grown
        # What is stored is intact: the refused snapshot left nothing half-made, the rest still restore.
        # (The kernel's journal keeps a baseline of the workspace before the first execute: its own label.)
        snaps = [s for s in t.get("api/workspaces/default/snapshots").json() if not s["label"].startswith("journal ")]
        assert snaps and all(s["label"].startswith("keep-") or s["label"] in ("", "manual") for s in snaps)
        first = snaps[0]["id"]
        r = t.post("api/workspaces/default/snapshots/%s/restore" % first, json={})
        assert r.status_code == 200, r.text

        # Restores into new workspaces count as well: each holds the snapshot's objects again.
        forks = 0
        for i in range(8):
            r = t.post("api/workspaces/default/snapshots/%s/restore" % first, json={"to": "copy%d" % i})
            if r.status_code != 201:
                break
            forks += 1
        assert r.status_code == 507 and "store_bytes" in r.json()["message"], (forks, r.status_code, r.text)
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_a_sparse_file_costs_what_it_holds():
    t = h.jailed(store_bytes="48M")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        before = store_bytes(t)
        # The execute's own snapshot stores the file; the labelled one after it adds nothing new.
        h.execute(t, kid, "f = open('/workspace/sparse.bin', 'wb'); f.seek((1 << 30) - 1); f.write(b'!'); f.close()")
        r = t.post("api/workspaces/default/snapshots", json={"label": "sparse"})
        grown = store_bytes(t) - before
        print("snapshot: %s; store grew by %d bytes" % (r.text, grown))
        assert r.status_code == 201, r.text
        assert grown < 1 << 20, "a 1 GiB sparse file holding one block took %d bytes in the store" % grown
        if "bytes_hashed" in r.json():
            assert r.json()["bytes_hashed"] < 1 << 20, r.text
        snap = r.json()["id"]
        # Restored (into a new workspace), it is the same file, with its holes.
        r = t.post("api/workspaces/default/snapshots/%s/restore" % snap, json={"to": "sparse-copy"})
        assert r.status_code == 201, r.text
        other = t.post("api/kernels", json={"name": "python3", "workspace": "sparse-copy"}).json()["id"]
        out = h.stdout_of(h.execute(t, other, (
            "import os\nst = os.stat('/workspace/sparse.bin')\nf = open('/workspace/sparse.bin', 'rb')\n"
            "f.seek(st.st_size - 1)\nprint(st.st_size, st.st_blocks * 512, f.read())\n"))).split()
        assert out[0] == str(1 << 30) and int(out[1]) < 1 << 20 and out[2] == "b'!'", out
        t.delete_kernel(other)
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_a_users_own_store_quota_comes_from_cellgate_user_set_limits():
    def add_users(t):
        t.tokens = {"admin": t.add_user("admin", "--admin"), "bob": t.add_user("bob")}
        t.cli("user", "set-limits", "bob", "--store-bytes", "24M")
        # The admin's token doubles as --token, so the harness's URL line check still holds.
        t.token = t.tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token
    t = h.jailed(store_bytes="1G")
    t.pre_start = add_users
    try:
        t.start()
        bob = tm.TokenClient(t, "bob", t.tokens["bob"])
        kid = bob.api("POST", "api/kernels", json={"name": "python3"}).json()["id"]
        codes = []
        for i in range(6):
            r = bob.api("POST", "api/kernels/%s/execute" % kid, json={"code": NEW_CONTENT, "timeout": 120})
            assert r.status_code == 200, r.text
            r = bob.api("POST", "api/workspaces/default/snapshots", json={"label": "b%d" % i})
            codes.append(r.status_code)
            if r.status_code != 201:
                break
        assert codes[-1] == 507 and "store_bytes" in r.json()["message"], (codes, r.text)
        assert codes.count(201) <= 2, codes
        bob.api("DELETE", "api/kernels/" + kid)
    finally:
        t.stop()
