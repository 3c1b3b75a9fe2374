# SPDX-License-Identifier: Apache-2.0
# The CLI's long work shows progress on a terminal and only there: `cellgate fsck`, `gc` and
# `restore` run on a pseudo-terminal draw a meter in place (and erase it), run with pipes print
# only their results. `cellgate restore` puts a workspace back to a snapshot beside a running gateway.
import os
import pty
import subprocess
import uuid

import pytest

from conftest import cellgate_only

ESC = "\x1b["


@pytest.fixture(autouse=True)
def _only_cellgate(target):
    cellgate_only(target, "the cellgate CLI")


def on_tty(argv, env):
    """Runs argv with stdin, stdout and stderr on a new pseudo-terminal; returns (rc, output)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def piped(argv, env):
    r = subprocess.run(argv, capture_output=True, timeout=120, env=env)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


@pytest.fixture
def workspace_with_history(target):
    """A workspace of 300 files snapshotted, then changed and snapshotted again."""
    ws = "cli-%s" % uuid.uuid4().hex[:8]
    assert target.post("api/workspaces", json={"name": ws}).status_code == 201
    for i in range(300):
        r = target.api("PUT", "api/workspaces/%s/files/f%d.txt" % (ws, i), data=b"v1 %d\n" % i)
        assert r.status_code in (200, 201, 204), (r.status_code, r.text)
    first = target.post("api/workspaces/%s/snapshots" % ws, json={"label": "before"}).json()["id"]
    for i in range(0, 300, 3):
        target.api("PUT", "api/workspaces/%s/files/f%d.txt" % (ws, i), data=b"v2\n")
    assert target.api("DELETE", "api/workspaces/%s/files/f1.txt" % ws).status_code in (200, 204)
    second = target.post("api/workspaces/%s/snapshots" % ws, json={"label": "after"}).json()["id"]
    return ws, first, second


def test_restore_shows_entries_on_a_terminal_and_restores(target, workspace_with_history):
    ws, first, _ = workspace_with_history
    env = dict(target.base_env(), TERM="xterm")
    rc, out = on_tty([target.binary, "restore", "--data-dir", target.data_dir, ws, first], env)
    assert rc == 0, out
    assert ESC + "Krestore: entries " in out, repr(out)
    assert "(100%)" in out, repr(out)
    # The meter is erased before the result is printed.
    assert "\r" + ESC + "Krestore: default/%s is snapshot %s: " % (ws, first) in out, repr(out)
    assert target.get("api/workspaces/%s/files/f0.txt" % ws).content == b"v1 0\n"
    assert target.get("api/workspaces/%s/files/f1.txt" % ws).content == b"v1 1\n"


def test_restore_into_a_pipe_prints_only_its_result(target, workspace_with_history):
    ws, first, second = workspace_with_history
    argv = [target.binary, "restore", "--data-dir", target.data_dir, ws, first]
    rc, out, err = piped(argv, dict(target.base_env(), TERM="xterm"))
    assert rc == 0, err
    assert err == ""
    assert ESC not in out and "\r" not in out
    assert out.startswith("restore: default/%s is snapshot %s: " % (ws, first)), out
    rc, out, err = piped(argv[:-1] + [second], target.base_env())
    assert rc == 0 and "1 removed" in out, (out, err)


def test_fsck_and_gc_show_progress_on_a_terminal_only(target, workspace_with_history):
    env = dict(target.base_env(), TERM="xterm")
    for command, phase in (("fsck", "fsck: objects "), ("gc", "gc: manifests ")):
        rc, out = on_tty([target.binary, command, "--data-dir", target.data_dir], env)
        assert rc == 0, out
        assert ESC + "K" + phase in out, repr(out)
        rc, out, err = piped([target.binary, command, "--data-dir", target.data_dir], env)
        assert rc == 0, err
        assert ESC not in out + err and "\r" not in out + err, repr(out + err)
    rc, out = on_tty([target.binary, "fsck", "--data-dir", target.data_dir], dict(env, TERM="dumb"))
    assert rc == 0 and ESC not in out, repr(out)


@pytest.mark.parametrize("args, says", [
    ([], "expected a workspace and a snapshot"),
    (["nope-%s" % uuid.uuid4().hex[:6], "00000001-00000000"], "no such"),
    (["--frobnicate"], "unknown option --frobnicate"),
])
def test_restore_bad_input_is_one_line(target, args, says):
    rc, out, err = piped([target.binary, "restore", "--data-dir", target.data_dir, *args], target.base_env())
    assert rc == 2, (out, err)
    assert says in err.lower(), err


def test_restore_unknown_snapshot_and_missing_data_dir(target, workspace_with_history, tmp_path):
    ws, _, _ = workspace_with_history
    rc, out, err = piped([target.binary, "restore", "--data-dir", target.data_dir, ws, "00000099-deadbeef"],
                         target.base_env())
    assert rc == 2 and err.count("\n") == 1, (out, err)
    missing = tmp_path / "no-such-data-dir"
    rc, out, err = piped([target.binary, "restore", "--data-dir", str(missing), ws, "x"], target.base_env())
    assert rc == 2 and "no object store" in err, err
    assert not missing.exists()
