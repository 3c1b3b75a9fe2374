# SPDX-License-Identifier: Apache-2.0
"""Seed notebooks (Kernel Gateway's seed_uri): --seed-notebook and kernel.json metadata.cellgate.seed,
on real jailed ipykernels through the REST API."""
import json
import os
import shutil
import time

import pytest

import targets as targets_mod

HERE = os.path.dirname(os.path.abspath(__file__))
NB = os.path.join(HERE, "nbhttp")


def add_spec(target, name, language="python", seed=None):
    d = os.path.join(target.kernels_dir, name)
    os.makedirs(d, exist_ok=True)
    spec = {"argv": [targets_mod.PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": name, "language": language, "metadata": {}}
    if seed:
        shutil.copy(os.path.join(NB, seed), os.path.join(d, seed))
        spec["metadata"]["cellgate"] = {"seed": seed}  # relative: beside kernel.json
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump(spec, f)


@pytest.fixture(scope="module")
def gw():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    t = targets_mod.make_target("cellgate", extra_args=[
        "--seed-notebook", os.path.join(NB, "seed.ipynb"), "--seed-timeout", "8"])
    add_spec(t, "cgother", language="other-language")
    add_spec(t, "cgspecseed", seed="spec_seed.ipynb")
    add_spec(t, "cgbadseed", seed="bad_seed.ipynb")
    add_spec(t, "cgslowseed", seed="slow_seed.ipynb")
    add_spec(t, "cgonceseed", seed="once_seed.ipynb")
    t.start()
    yield t
    t.stop()


def execute(t, kid, code):
    r = t.post("api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60})
    assert r.status_code == 200, r.text
    return r.json()


def stdout(res):
    return "".join(o.get("text", "") for o in res["outputs"] if o["type"] == "stream" and o["name"] == "stdout")


@pytest.fixture
def kernel(gw):
    made = []

    def make(name=None, expect=201):
        body = {"name": name} if name else {}
        r = gw.post("api/kernels", json=body)
        assert r.status_code == expect, r.text
        if r.status_code == 201:
            made.append(r.json()["id"])
        return r
    yield make
    for kid in made:
        gw.delete_kernel(kid)


def wait_state(gw, kid, want, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = gw.get("api/kernels/" + kid).json().get("execution_state")
        if state == want:
            return
        time.sleep(0.2)
    raise AssertionError("kernel %s never became %s" % (kid, want))


def test_global_seed_runs_before_the_kernel_is_handed_out(gw, kernel):
    kid = kernel().json()["id"]
    res = execute(gw, kid, "print(SEEDED)")
    assert res["status"] == "ok", res
    assert stdout(res) == "42\n"
    # Seeds run silently and outside the history: the first cell a client runs is still In[1].
    assert res["execution_count"] == 1
    # The seed ran inside the jail, in the very process that serves the kernel.
    res = execute(gw, kid, "import os, socket; print(SEED_PID == os.getpid(), socket.gethostname())")
    host = "sandbox" if gw.spawner == "jail" else __import__("socket").gethostname()
    assert stdout(res) == "True %s\n" % host, res


def test_global_seed_applies_to_every_kernel_of_its_language(gw, kernel):
    if not os.path.exists("/usr/local/share/jupyter/kernels/xpython/kernel.json"):
        pytest.skip("xpython is not installed (scripts/install-xpython.sh)")
    kid = kernel("xpython").json()["id"]
    res = execute(gw, kid, "print(SEEDED)")
    assert stdout(res) == "42\n", res


def test_global_seed_only_for_its_language(gw, kernel):
    kid = kernel("cgother").json()["id"]
    res = execute(gw, kid, "print(SEEDED)")
    assert res["status"] == "error"
    assert any(o["type"] == "error" and o["ename"] == "NameError" for o in res["outputs"]), res


def test_kernelspec_seed_replaces_the_global_one(gw, kernel):
    kid = kernel("cgspecseed").json()["id"]
    res = execute(gw, kid, "print(SPEC_SEED); print('SEEDED' in globals())")
    assert stdout(res) == "from the kernelspec\nFalse\n", res


def test_failing_seed_fails_the_start_with_the_cell_and_the_error(gw, kernel):
    before = {k["id"] for k in gw.get("api/kernels").json()}
    dirs = lambda: set(os.listdir(os.path.join(gw.run_dir, "k"))) | set(os.listdir(os.path.join(gw.run_dir, "s")))
    dirs_before = dirs()
    r = kernel("cgbadseed", expect=500)
    body = r.json()
    assert body["reason"] == "Internal Server Error"
    assert "cell 3 failed" in body["message"] and "ValueError: bad seed" in body["message"], body
    assert body["seed"] == {"notebook": "bad_seed.ipynb", "cell": 2, "ename": "ValueError", "evalue": "bad seed"}
    # The kernel is gone: not listed, its jail stopped and its runtime dirs removed.
    assert {k["id"] for k in gw.get("api/kernels").json()} == before
    assert dirs() == dirs_before


def test_seed_is_bounded_in_time(gw, kernel):
    started = time.monotonic()
    r = kernel("cgslowseed", expect=504)
    assert time.monotonic() - started < 40
    assert "did not finish within 8 s" in r.json()["message"], r.text


def test_seed_runs_again_after_restart(gw, kernel):
    kid = kernel().json()["id"]
    execute(gw, kid, "SEEDED = 0")
    r = gw.post("api/kernels/%s/restart" % kid)
    assert r.status_code == 200, r.text
    res = execute(gw, kid, "print(SEEDED)")
    assert stdout(res) == "42\n", res


def test_seed_runs_again_after_the_kernel_dies(gw, kernel):
    kid = kernel().json()["id"]
    execute(gw, kid, "SEEDED = 0")
    res = gw.post("api/kernels/%s/execute" % kid, json={"code": "import os; os._exit(1)", "timeout": 30}).json()
    assert res["status"] == "dead", res
    wait_state(gw, kid, "idle")
    res = execute(gw, kid, "print(SEEDED)")
    assert stdout(res) == "42\n", res


def test_seed_failing_on_restart_leaves_the_kernel_dead_with_the_reason(gw, kernel):
    kid = kernel("cgonceseed").json()["id"]
    r = gw.post("api/kernels/%s/restart" % kid)
    assert r.status_code == 500, r.text
    assert "cell 1 failed: RuntimeError: seeded before" in r.json()["message"], r.text
    model = gw.get("api/kernels/" + kid).json()
    assert model["execution_state"] == "dead"
    assert "seeded before" in model["reason"]
