# SPDX-License-Identifier: Apache-2.0
"""`cellgate run`: every notebook in notebooks/ executed through the CLI on real (jailed) kernels.

Each executed notebook must validate with nbformat and show the outputs its cells are meant to
produce. Most runs use the gateway embedded in `cellgate run`; workspace-history and the failure
cases run against a `cellgate serve` through --url, which lets the test restore a snapshot between
runs and check what the CLI reports when things go wrong.
"""
import base64
import glob
import json
import os
import shutil
import subprocess
import tempfile

import nbformat
import pytest

import targets as targets_mod

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NOTEBOOK_DIR = os.path.join(REPO, "notebooks")
NOTEBOOKS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))
SPAWNER = os.environ.get("CELLGATE_TEST_SPAWNER", "plain")


def binary():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate required but " + why)
    return path


@pytest.fixture(scope="module")
def tmp():
    d = tempfile.mkdtemp(prefix="cgrun-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def served():
    t = targets_mod.make_target("cellgate")
    t.start()
    yield t
    t.stop()


def cellgate_run(args, env=None, timeout=400):
    base = {k: v for k, v in os.environ.items() if not k.startswith("CELLGATE_")}
    base.update(env or {})
    return subprocess.run([binary(), "run", *args], capture_output=True, text=True, timeout=timeout, env=base)


def embedded(tmp):
    """Options for the embedded gateway: this run's spawner and a private ipc dir."""
    run_dir = os.path.join(tmp, "rt")
    os.makedirs(run_dir, exist_ok=True)
    # No workspace volume: a run killed by a timeout would leave it mounted (targets.py's gateways have one).
    return ["--spawner", SPAWNER, "--runtime-dir", run_dir, "--workspace-volume", "off"]


def via_url(target):
    return {"CELLGATE_URL": target.url, "CELLGATE_TOKEN": target.token}


def read_valid(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def json_results(nb):
    return [o.data["application/json"] for c in code_cells(nb) for o in c.outputs
            if o.output_type == "display_data" and "application/json" in o.data]


def one_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("cellgate run:")]
    assert len(lines) == 1, stderr
    return lines[0]


# ---- what each notebook must show

def check_sandbox_tour(nb):
    cells = code_cells(nb)
    if SPAWNER == "jail":
        for line in ("User:     sandbox", "Host:     sandbox", "Folder:   /workspace"):
            assert line in text_of(cells[0]), text_of(cells[0])
        for c in cells[1:]:
            assert "this should not happen" not in text_of(c), text_of(c)
    for c in cells:
        assert text_of(c).strip(), "every tour cell prints its result"


def check_data_analysis(nb):
    cells = code_cells(nb)
    assert "36 rows, 3 regions, 12 months" in text_of(cells[0])
    assert any("text/html" in o.get("data", {}) for o in cells[0].outputs), "df.head() renders as a table"
    assert "total units: 4140" in text_of(cells[1]) and "total revenue: 21154.50" in text_of(cells[1])
    result = [o for o in cells[1].outputs if o.output_type == "execute_result"]
    assert result and result[0].execution_count == cells[1].execution_count
    pngs = [o.data["image/png"] for c in cells for o in c.outputs
            if o.output_type == "display_data" and "image/png" in o.data]
    assert len(pngs) == 1, "one figure"
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "best region: north" in text_of(cells[3])


def check_data_analysis_r(nb):
    """The same analysis in R (IRkernel): IRkernel shows a value as display_data (text/html table)."""
    cells = code_cells(nb)
    assert "36 rows, 3 regions, 12 months" in text_of(cells[0])
    assert any("text/html" in o.get("data", {}) for o in cells[0].outputs), "head(sales) renders as a table"
    assert "total units: 4140" in text_of(cells[1]) and "total revenue: 21154.50" in text_of(cells[1])
    assert any("text/html" in o.get("data", {}) for o in cells[1].outputs), "the by-region table"
    pngs = [o.data["image/png"] for c in cells for o in c.outputs
            if o.output_type == "display_data" and "image/png" in o.data]
    assert len(pngs) == 1, "one figure (ggplot2)"
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "best region: north (7474.50)" in text_of(cells[3])


def check_workspace_history(nb):
    cells = code_cells(nb)
    assert "wrote notes/plan.md and config.json" in text_of(cells[0])
    assert "config.json is broken" in text_of(cells[2])
    assert "notes/plan.md exists: False" in text_of(cells[2])
    meta = [c.metadata.get("cellgate", {}) for c in cells]
    assert {"config.json", "notes/plan.md"} <= set(meta[0]["added"]), meta[0]
    assert "config.json" in meta[1]["changed"], meta[1]
    assert "config.json" in meta[2]["changed"] and "notes/plan.md" in meta[2]["removed"], meta[2]
    assert len({m["snapshot"] for m in meta[:3]}) == 3, "one snapshot per changing cell"


def check_agent_session(nb):
    results = json_results(nb)
    calls = [r["call"] for r in results]
    assert calls == ["start", "find_primes", "sum_primes", "retry"], results
    assert results[1]["count"] == 25 and results[2]["sum"] == 1060 and results[2]["calls_so_far"] == 3
    assert results[3]["primes_below_limit"] == [2, 3, 5, 7, 11]
    assert results[3]["history"] == ["start", "find_primes", "sum_primes", "retry"], "state survived the error"
    errors = [o for c in code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ValueError", errors
    assert "saved agent-result.json after 4 calls" in text_of(code_cells(nb)[-1])


CHECKS = {
    "sandbox-tour.ipynb": check_sandbox_tour,
    "data-analysis.ipynb": check_data_analysis,
    "data-analysis-r.ipynb": check_data_analysis_r,
    "workspace-history.ipynb": check_workspace_history,
    "agent-session.ipynb": check_agent_session,
}


def test_every_notebook_has_checks():
    assert set(CHECKS) <= set(NOTEBOOKS), "a checked notebook is missing from notebooks/"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_embedded(name, tmp):
    src = os.path.join(NOTEBOOK_DIR, name)
    out = os.path.join(tmp, "out-" + name)
    before = open(src, "rb").read()
    kernel = read_valid(src).metadata.kernelspec
    if not os.path.exists("/usr/share/jupyter/kernels/%s/kernel.json" % kernel.name) and kernel.name != "python3":
        pytest.skip("kernelspec %s is not installed (scripts/install-deps.sh installs it)" % kernel.name)
    p = cellgate_run([src, "--output", out, *embedded(tmp)])
    assert p.returncode == 0, p.stderr
    assert open(src, "rb").read() == before, "--output leaves the input alone"
    nb = read_valid(out)
    for c in code_cells(nb):
        assert c.execution_count is not None, c.source[:40]
    assert nb.metadata.language_info.name.lower() == kernel.language.lower()
    if name in CHECKS:
        CHECKS[name](nb)


def test_in_place_with_data_files(tmp):
    """Without --output the notebook is overwritten; metadata.cellgate.files travel to /workspace."""
    d = os.path.join(tmp, "inplace")
    os.makedirs(d)
    for f in ("data-analysis.ipynb", "sales.csv"):
        shutil.copy(os.path.join(NOTEBOOK_DIR, f), d)
    p = cellgate_run([os.path.join(d, "data-analysis.ipynb"), *embedded(tmp)])
    assert p.returncode == 0, p.stderr
    check_data_analysis(read_valid(os.path.join(d, "data-analysis.ipynb")))
    os.remove(os.path.join(d, "sales.csv"))
    p = cellgate_run([os.path.join(d, "data-analysis.ipynb"), *embedded(tmp)])
    assert p.returncode == 2 and "sales.csv: not a readable file" in one_line(p.stderr), p.stderr


def test_workspace_history_restore(served, tmp):
    out = os.path.join(tmp, "history.ipynb")
    args = [os.path.join(NOTEBOOK_DIR, "workspace-history.ipynb"), "--output", out, "--workspace", "history"]
    p = cellgate_run(args, env=via_url(served))
    assert p.returncode == 0, p.stderr
    nb = read_valid(out)
    check_workspace_history(nb)
    good = code_cells(nb)[1].metadata["cellgate"]["snapshot"]
    r = served.post("api/workspaces/history/snapshots/%s/restore" % good, json={})
    assert r.status_code == 200, r.text
    cfg = served.get("api/workspaces/history/files/config.json")
    assert cfg.status_code == 200 and json.loads(cfg.content) == {"version": 2, "threshold": 0.75}
    # Run again on the restored workspace: the last cell now sees the good files.
    p = cellgate_run(args, env=via_url(served))
    assert p.returncode == 0, p.stderr
    first_cell_meta = code_cells(read_valid(out))[0].metadata["cellgate"]
    assert "notes/plan.md" not in first_cell_meta.get("added", []), "plan.md was already back"


def write_nb(path, sources, kernel="python3"):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    if kernel:
        nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nbformat.write(nb, path)
    return path


def test_failing_cell_stops_and_names_it(served, tmp):
    src = write_nb(os.path.join(tmp, "fails.ipynb"), ["print('one')", "# divide\n1/0", "print('never')"])
    out = os.path.join(tmp, "fails-out.ipynb")
    p = cellgate_run([src, "--output", out], env=via_url(served))
    assert p.returncode == 1, p.stderr
    line = one_line(p.stderr)
    assert "cell 2 (# divide) failed: ZeroDivisionError: division by zero" in line, line
    cells = code_cells(read_valid(out))
    assert text_of(cells[0]) == "one\n"
    assert cells[1].outputs[0].output_type == "error" and cells[1].outputs[0].ename == "ZeroDivisionError"
    assert cells[2].outputs == [] and cells[2].execution_count is None, "nothing ran after the failure"

    p = cellgate_run([src, "--output", out, "--allow-errors"], env=via_url(served))
    assert p.returncode == 0, p.stderr
    assert text_of(code_cells(read_valid(out))[2]) == "never\n"


def test_timeout_interrupts(served, tmp):
    src = write_nb(os.path.join(tmp, "slow.ipynb"), ["import time\nprint('start', flush=True)\ntime.sleep(60)"])
    p = cellgate_run([src, "--output", os.path.join(tmp, "slow-out.ipynb"), "--timeout", "3"], env=via_url(served))
    assert p.returncode == 1, p.stderr
    assert "cell 1 (import time) timed out after 3 s" in one_line(p.stderr)
    assert text_of(code_cells(read_valid(os.path.join(tmp, "slow-out.ipynb")))[0]) == "start\n"


def test_malformed_notebook(served, tmp):
    bad = os.path.join(tmp, "bad.ipynb")
    with open(bad, "w") as f:
        f.write('{"cells": [ oops')
    p = cellgate_run([bad], env=via_url(served))
    assert p.returncode == 2 and "not valid JSON" in one_line(p.stderr), p.stderr
    with open(bad, "w") as f:
        json.dump({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code"}]}, f)
    p = cellgate_run([bad], env=via_url(served))
    assert p.returncode == 2 and "cell 1 has no valid source" in one_line(p.stderr), p.stderr


def test_missing_kernel(served, tmp):
    src = write_nb(os.path.join(tmp, "nokernel.ipynb"), ["1"], kernel="no-such-kernel")
    p = cellgate_run([src], env=via_url(served))
    assert p.returncode == 2, p.stderr
    assert "cannot start kernel 'no-such-kernel'" in one_line(p.stderr), p.stderr
    p = cellgate_run([src, "--kernel", "python3", "--output", os.path.join(tmp, "k.ipynb")], env=via_url(served))
    assert p.returncode == 0, p.stderr


def test_unreachable_gateway(tmp):
    src = write_nb(os.path.join(tmp, "x.ipynb"), ["1"])
    port = targets_mod.free_port()
    p = cellgate_run([src, "--url", "http://127.0.0.1:%d/" % port, "--token", "t"])
    assert p.returncode == 2 and "unreachable" in one_line(p.stderr), p.stderr


def test_runs_against_jupyter_server(tmp):
    """`cellgate run --url` is a plain Jupyter client: it runs a notebook on Debian's jupyter_server too."""
    t = targets_mod.make_target("jupyter_server")
    t.start()
    try:
        out = os.path.join(tmp, "js-agent.ipynb")
        p = cellgate_run([os.path.join(NOTEBOOK_DIR, "agent-session.ipynb"), "--output", out], env=via_url(t))
        assert p.returncode == 0, p.stderr
        check_agent_session(read_valid(out))
    finally:
        t.stop()


def test_interrupt_shuts_the_kernel_down(tmp):
    """Ctrl-C on an embedded run interrupts the cell, deletes the kernel and exits 130: jailed
    kernels run in sessions of their own and must not outlive the run."""
    import signal
    import time
    rt = os.path.join(tmp, "rt-int")
    src = write_nb(os.path.join(tmp, "forever.ipynb"), ["import time\ntime.sleep(300)"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELLGATE_")}
    p = subprocess.Popen([binary(), "run", src, "--output", os.path.join(tmp, "forever-out.ipynb"),
                          "--spawner", SPAWNER, "--runtime-dir", rt, "--workspace-volume", "off"],
                         stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(4)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted; the kernel was shut down" in one_line(err)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if rt.encode() in f.read():
                    left.append(pid)
        except OSError:
            pass
    assert not left, "processes of the run outlived it: %s" % left


def test_progress_on_a_terminal_only(served, tmp):
    """`cellgate run` shows "cells i/n" and the elapsed time on a terminal, redrawn while a long cell
    runs, and erases it before its last line; into a pipe it prints that line alone."""
    import pty
    src = write_nb(os.path.join(tmp, "progress.ipynb"), ["x = 1", "import time; time.sleep(1.5)", "print(x)"])
    out = os.path.join(tmp, "progress-out.ipynb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELLGATE_")}
    env.update(via_url(served), TERM="xterm")
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(binary(), [binary(), "run", src, "--output", out], env)
        finally:
            os._exit(127)
    text = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = text.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    # Redrawn during the 1.5 s cell, not only once per cell.
    assert text.count("\x1b[Krun: cells 1/3 ") >= 2, repr(text)
    assert "\r\x1b[Kcellgate run: " in text, repr(text)  # erased before the result line
    p = cellgate_run([src, "--output", out], env=dict(via_url(served), TERM="xterm"))
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stderr and "\r" not in p.stderr, repr(p.stderr)
    assert p.stderr.startswith("cellgate run: ") and p.stderr.count("\n") == 1, repr(p.stderr)
