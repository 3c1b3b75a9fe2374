"""notebooks/ run cell by cell through the gateway (agent execute API) on a jailed kernel."""
import json
import os

import pytest

import targets as targets_mod

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run_notebook(target, path):
    with open(path) as f:
        nb = json.load(f)
    kid = target.start_kernel()["id"]
    outputs = []
    try:
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            r = target.post("api/kernels/%s/execute" % kid, json={"code": "".join(cell["source"]), "timeout": 120})
            assert r.status_code == 200, r.text
            res = r.json()
            assert res["status"] == "ok", (cell["source"][:3], res)
            outputs.append("".join(o.get("text", "") for o in res["outputs"] if o["type"] == "stream"))
    finally:
        target.delete_kernel(kid)
    return outputs


def test_sandbox_tour_through_the_gateway():
    if os.environ.get("CELLGATE_TEST_SPAWNER", "plain") != "jail":
        pytest.skip("the tour shows the jail; this run uses the plain spawner")
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    t = targets_mod.make_target("cellgate")
    t.start()
    try:
        outs = run_notebook(t, os.path.join(REPO, "notebooks", "sandbox-tour.ipynb"))
    finally:
        t.stop()
    first = outs[0]
    for line in ("User:     sandbox", "Host:     sandbox", "System:   Linux", "Folder:   /workspace", "Workspace:"):
        assert line in first, first
    assert len(outs) >= 5
    for out in outs[1:]:
        assert out.strip(), "every check cell prints a one-line result"
