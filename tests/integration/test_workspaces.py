# SPDX-License-Identifier: Apache-2.0
# Workspaces and snapshots over REST: per-cell snapshots, restore keeps kernel memory, safe paths.
import io
import os
import tarfile
import time
import uuid

import pytest

from conftest import cellgate_only

WS = "api/workspaces/default/"


@pytest.fixture(autouse=True)
def _only_cellgate(target):
    cellgate_only(target, "workspaces are a cellgate extension")


def execute(target, kid, code, **kw):
    body = {"code": code}
    body.update(kw)
    r = target.post("api/kernels/%s/execute" % kid, json=body)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


def assert_error(r, statuses=range(400, 500)):
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) >= {"reason", "message"}, body
    return body


def test_cell_writes_file_and_reply_names_snapshot(target, new_kernel):
    kid = new_kernel()["id"]
    name = "f_%s.txt" % uuid.uuid4().hex[:8]
    rep = execute(target, kid, "open(%r, 'w').write('hello')" % name)
    assert rep["status"] == "ok", rep
    ws = rep["workspace"]
    assert ws["workspace"] == "default", ws
    assert ws["snapshot"] and ws["new_snapshot"] is True, ws
    assert name in ws["added"], ws
    snaps = target.get(WS + "snapshots").json()
    assert ws["snapshot"] in [s["id"] for s in snaps], snaps
    manifest = target.get(WS + "snapshots/" + ws["snapshot"])
    assert manifest.status_code == 200, manifest.text
    assert name in manifest.text


def test_websocket_reply_carries_cellgate_metadata(target, new_kernel, connect):
    kid = new_kernel()["id"]
    c = connect(kid)
    name = "ws_%s.txt" % uuid.uuid4().hex[:8]
    res = c.execute("open(%r, 'w').write('via ws')" % name)
    assert res.reply["content"]["status"] == "ok", res.reply
    meta = res.reply["metadata"].get("cellgate")
    assert meta is not None, res.reply["metadata"]
    assert meta["workspace"] == "default"
    assert meta["new_snapshot"] is True and meta["snapshot"], meta
    assert name in meta["added"], meta
    assert {"changed", "removed"} <= set(meta), meta


def test_silent_execute_skips_the_snapshot_the_next_cell_takes_it(target, new_kernel, connect):
    kid = new_kernel()["id"]
    c = connect(kid)
    name = "silent_%s.txt" % uuid.uuid4().hex[:8]
    res = c.execute("open(%r, 'w').write('quiet')" % name, silent=True)
    assert res.reply["content"]["status"] == "ok", res.reply
    # A silent execute (agent env set/restore, a frontend's introspection) costs no snapshot.
    assert "cellgate" not in res.reply["metadata"], res.reply["metadata"]
    res = c.execute("1+1")
    meta = res.reply["metadata"].get("cellgate")
    assert meta is not None and meta["new_snapshot"] is True, res.reply["metadata"]
    assert name in meta["added"], meta


def test_unchanged_tree_skips_the_walk_but_every_change_is_seen(target, new_kernel, connect):
    """The gateway walks a workspace after an execute only when inotify saw a change (or the last walk
    is 2 s old: mmap writes). Whatever the shortcut, each reply must name the snapshot equal to the tree."""
    kid = new_kernel()["id"]
    c = connect(kid)
    d = "cw_%s" % uuid.uuid4().hex[:8]

    def meta(code):
        res = c.execute(code)
        assert res.reply["content"]["status"] == "ok", res.reply
        return res.reply["metadata"]["cellgate"]

    first = meta("import os, mmap, time; os.makedirs(%r); open(%r + '/a.txt', 'w').write('hello')" % (d, d))
    assert first["new_snapshot"] is True and d + "/a.txt" in first["added"], first
    same = meta("1+1")
    assert same["new_snapshot"] is False and same["snapshot"] == first["snapshot"], same
    # The unchanged reply is spliced into the kernel's metadata text: it must keep ipykernel's own
    # members and carry the same fields as a walked one.
    res = c.execute("2+2")
    assert res.reply["metadata"].get("status") == "ok" and "started" in res.reply["metadata"], res.reply
    assert res.reply["metadata"]["cellgate"] == {"workspace": "default", "snapshot": first["snapshot"],
                                                 "new_snapshot": False, "added": [], "changed": [],
                                                 "removed": []}, res.reply["metadata"]
    # Same size, in place: only the watch (or the stat key) can tell.
    edited = meta("f = open(%r + '/a.txt', 'r+'); f.write('HELLO'); f.close()" % d)
    assert edited["new_snapshot"] is True and edited["changed"] == [d + "/a.txt"], edited
    # A directory made after the last walk, and a file two levels into it, then changed there.
    deep = meta("os.makedirs(%r + '/x/y'); open(%r + '/x/y/b.txt', 'w').write('1')" % (d, d))
    assert d + "/x/y/b.txt" in deep["added"], deep
    assert meta("1+1")["new_snapshot"] is False
    appended = meta("open(%r + '/x/y/b.txt', 'a').write('2')" % d)
    assert appended["changed"] == [d + "/x/y/b.txt"], appended
    removed = meta("os.remove(%r + '/x/y/b.txt')" % d)
    assert removed["removed"] == [d + "/x/y/b.txt"], removed
    # A snapshot taken over REST moves the head: the next quiet execute names it.
    r = target.post(WS + "snapshots", json={"label": "cw"})
    assert r.status_code in (200, 201), r.text
    labelled = r.json()["id"]
    assert meta("1+1")["snapshot"] == labelled
    # A write through a shared mapping raises no inotify event: it is seen once the last walk is 2 s old.
    meta("m = mmap.mmap(os.open(%r + '/a.txt', os.O_RDWR), 5)" % d)
    wrote = meta("m[0:5] = b'howdy'; m.flush()")
    late = meta("time.sleep(2.2)")
    assert [d + "/a.txt"] in (wrote["changed"], late["changed"]), (wrote, late)
    assert meta("1+1")["snapshot"] == late["snapshot"]


def test_labelled_snapshot_restore_in_place_keeps_memory(target, new_kernel):
    kid = new_kernel()["id"]
    execute(target, kid, "open('data.txt', 'w').write('original')")
    r = target.post(WS + "snapshots", json={"label": "before"})
    assert r.status_code in (200, 201), r.text
    before = r.json()["id"]
    rep = execute(target, kid, "x = 42\nopen('data.txt', 'w').write('overwritten')")
    assert rep["status"] == "ok", rep
    assert "data.txt" in rep["workspace"]["changed"], rep["workspace"]
    after = rep["workspace"]["snapshot"]
    assert target.get(WS + "files/data.txt").content == b"overwritten"

    diff = target.get(WS + "diff", params={"from": before, "to": after})
    assert diff.status_code == 200, diff.text
    assert "data.txt" in diff.json()["changed"], diff.json()

    r = target.post(WS + "snapshots/%s/restore" % before, json={})
    assert r.status_code == 200, r.text
    assert target.get(WS + "files/data.txt").content == b"original"
    rep = execute(target, kid, "print(open('data.txt').read(), x)")
    assert rep["status"] == "ok", rep
    text = "".join(o.get("text", "") for o in rep["outputs"] if o.get("name") == "stdout")
    # IPython may add a line warning about its history database (~/.ipython lives in the
    # workspace, so the restore replaced it underneath the kernel): look for our line.
    assert "original 42" in text.splitlines(), rep["outputs"]
    labels = {s["id"]: s.get("label") for s in target.get(WS + "snapshots").json()}
    assert labels.get(before) == "before", labels


def test_files_listing_and_put_get_round_trip(target, new_kernel):
    kid = new_kernel()["id"]
    execute(target, kid, "import os\nos.makedirs('sub', exist_ok=True)")
    payload = bytes(range(256)) * 4
    r = target.api("PUT", WS + "files/sub/blob.bin", data=payload)
    assert r.status_code in (200, 201, 204), r.text
    assert target.get(WS + "files/sub/blob.bin").content == payload
    listing = target.get(WS + "files/sub")
    assert listing.status_code == 200, listing.text
    assert "blob.bin" in listing.text
    root = target.get(WS + "files/")
    assert root.status_code == 200 and "sub" in root.text, root.text
    assert target.api("DELETE", WS + "files/sub/blob.bin").status_code in (200, 204)
    assert target.get(WS + "files/sub/blob.bin").status_code == 404


def test_archive_is_a_tar(target, new_kernel):
    kid = new_kernel()["id"]
    rep = execute(target, kid, "open('in_tar.txt', 'w').write('tarred')")
    snap = rep["workspace"]["snapshot"]
    r = target.get(WS + "snapshots/%s/archive" % snap)
    assert r.status_code == 200, r.text[:300]
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = [n.lstrip("./") for n in tar.getnames()]
        assert "in_tar.txt" in names, names
        member = tar.getmember(tar.getnames()[names.index("in_tar.txt")])
        assert tar.extractfile(member).read() == b"tarred"


def _rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


class StalledDownloads:
    """n clients that GET path and read only the response head, each on its own connection; with a
    block, the gateway has sent every head (so built every body) when the block starts."""

    def __init__(self, target, path, n):
        import requests
        self.sessions, self.streams = [], []
        for _ in range(n):
            s = requests.Session()
            s.headers.update(target.http.headers)
            self.sessions.append(s)
            r = s.get(target.url + path, stream=True, timeout=90)
            assert r.status_code == 200, (r.status_code, r.text[:300])
            self.streams.append(r)

    def __enter__(self):
        return self.streams

    def __exit__(self, *exc):
        for s in self.sessions:
            s.close()


def test_archive_is_streamed_from_disk_not_held_in_memory(target, new_kernel):
    """Four clients that have the head of a 48 MiB archive but read nothing more: the gateway holds
    none of the four in memory (it did: 4 x 48 MiB), and then each client gets all of it, intact."""
    import hashlib
    kid = new_kernel()["id"]
    rep = execute(target, kid, "import hashlib, os\n"
                               "for i in range(3):\n"
                               "    data = os.urandom(16 << 20)\n"
                               "    open('big%d.bin' % i, 'wb').write(data)\n"
                               "    print(hashlib.sha256(data).hexdigest())\n")
    assert rep["status"] == "ok", rep
    digests = "".join(o.get("text", "") for o in rep["outputs"]).split()
    assert len(digests) == 3, rep
    path = WS + "snapshots/%s/archive" % rep["workspace"]["snapshot"]
    head = target.api("HEAD", path)
    assert head.status_code == 200 and head.headers["Content-Type"] == "application/x-tar" and not head.content
    before = _rss_mib(target.proc.pid)
    with StalledDownloads(target, path, 4) as streams:
        assert all(r.headers["Content-Type"] == "application/x-tar" for r in streams)
        size = int(streams[0].headers["Content-Length"])
        assert size > 48 << 20 and all(int(r.headers["Content-Length"]) == size for r in streams), size
        assert int(head.headers["Content-Length"]) == size
        # Every archive has been built (its head is sent after): what the gateway holds, it holds now.
        grown = _rss_mib(target.proc.pid) - before
        assert grown < 24, "gateway RSS grew by %.1f MiB with four 48 MiB archives unread" % grown
        for r in streams:
            body = r.raw.read(decode_content=False)
            assert len(body) == size
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                got = {n.lstrip("./"): hashlib.sha256(tar.extractfile(n).read()).hexdigest()
                       for n in tar.getnames() if n.lstrip("./").startswith("big")}
            assert got == {"big%d.bin" % i: digests[i] for i in range(3)}, got
    # The staged files are closed (so gone) once their downloads are done.
    fd_dir = "/proc/%d/fd" % target.proc.pid

    def staged():
        links = []
        for fd in os.listdir(fd_dir):
            try:
                links.append(os.readlink(os.path.join(fd_dir, fd)))
            except FileNotFoundError:
                pass
        return [link for link in links if link.endswith("(deleted)")]
    for _ in range(50):  # the last write's completion may still be on its way to the session loop
        if not staged():
            break
        time.sleep(0.1)
    assert not staged(), staged()


def test_large_file_download_is_streamed_whole(target, new_kernel):
    """GET of a workspace file larger than the 64 MiB that used to be read into memory (and refused
    above it): two stalled clients cost the gateway no memory, and each gets the file intact."""
    import hashlib
    import requests
    kid = new_kernel()["id"]
    rep = execute(target, kid, "import hashlib, os\n"
                               "data = os.urandom(80 << 20)\n"
                               "open('large.bin', 'wb').write(data)\n"
                               "print(hashlib.sha256(data).hexdigest())\n")
    assert rep["status"] == "ok", rep
    digest = "".join(o.get("text", "") for o in rep["outputs"]).strip()
    before = _rss_mib(target.proc.pid)
    with StalledDownloads(target, WS + "files/large.bin", 2) as streams:
        assert all(int(r.headers["Content-Length"]) == 80 << 20 for r in streams)
        grown = _rss_mib(target.proc.pid) - before
        assert grown < 24, "gateway RSS grew by %.1f MiB with two 80 MiB downloads unread" % grown
        for r in streams:
            assert hashlib.sha256(r.raw.read(decode_content=False)).hexdigest() == digest
    # HEAD answers as GET does, without the body.
    head = target.api("HEAD", WS + "files/large.bin")
    assert head.status_code == 200 and int(head.headers["Content-Length"]) == 80 << 20 and not head.content
    # The connection stays usable after a streamed body (keep-alive): the next request on it works.
    s = requests.Session()
    s.headers.update(target.http.headers)
    assert len(s.get(target.url + WS + "files/large.bin", timeout=90).content) == 80 << 20
    assert s.get(target.url + "api/status", timeout=30).status_code == 200
    s.close()


def test_fork_restore_into_new_workspace(target, new_kernel):
    kid = new_kernel()["id"]
    rep = execute(target, kid, "open('forked.txt', 'w').write('fork me')")
    snap = rep["workspace"]["snapshot"]
    to = "w2_" + uuid.uuid4().hex[:6]
    r = target.post(WS + "snapshots/%s/restore" % snap, json={"to": to})
    assert r.status_code in (200, 201), r.text
    names = [w["name"] if isinstance(w, dict) else w for w in target.get("api/workspaces").json()]
    assert to in names, names
    assert target.get("api/workspaces/%s/files/forked.txt" % to).content == b"fork me"


@pytest.mark.parametrize("path", ["../x", "..%2Fx", "a/../../x", "%2Fetc%2Fpasswd"])
def test_path_validation_refuses_escapes(target, path):
    r = target.get(WS + "files/" + path)
    body = assert_error(r)
    assert "root:" not in r.text, body


def test_planted_symlink_is_never_followed(target, new_kernel):
    kid = new_kernel()["id"]
    rep = execute(target, kid, "import os\nos.symlink('/etc/passwd', 'l')\nos.symlink('/etc', 'd')")
    assert rep["status"] == "ok", rep
    for path in ("l", "d/passwd"):
        r = target.get(WS + "files/" + path)
        assert_error(r)
        assert "root:" not in r.text
    # The snapshot stores the link as a link (its target), never the host file's content.
    snap = rep["workspace"]["snapshot"]
    man = target.get(WS + "snapshots/" + snap).text
    assert "root:" not in man
    tar = target.get(WS + "snapshots/%s/archive" % snap)
    assert b"root:x:0:0" not in tar.content


def _inotify_watches(pid):
    """Watches held by the gateway's inotify instances (fdinfo lists one "inotify wd:" line each)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:inotify":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                n += sum(1 for line in f if line.startswith("inotify wd:"))
        except FileNotFoundError:
            continue
    return n


def test_a_deleted_kernels_workspace_is_no_longer_watched(target, new_kernel, connect):
    """inotify watches are a host-wide budget: the last kernel of a workspace gives its watches back."""
    cellgate_only(target, "cellgate's change watch")
    kid = new_kernel()["id"]
    c = connect(kid)
    assert c.execute("import os; os.makedirs('w1/w2', exist_ok=True)").reply["content"]["status"] == "ok"
    assert _inotify_watches(target.proc.pid) >= 3  # the tree, w1 and w2
    other = new_kernel()["id"]  # same user, same workspace: still watched after the first goes
    assert target.delete_kernel(kid).status_code == 204
    assert _inotify_watches(target.proc.pid) >= 3
    assert target.delete_kernel(other).status_code == 204
    left = target.get("api/kernels").json()
    if left:
        pytest.skip("other kernels are running: %s" % [k["id"] for k in left])
    assert _inotify_watches(target.proc.pid) == 0
