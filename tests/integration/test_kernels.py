# SPDX-License-Identifier: Apache-2.0
"""The kernels Debian packages for other languages, served by `cellgate serve` with jailed kernels and
the default policy, as a new user meets them: `POST /api/kernels {"name": "ir"}` (IRkernel,
r-cran-irkernel) and {"name": "octave"} (octave_kernel, python3-octave-kernel). They start, keep their
state, run as the sandbox user, stop on an interrupt, forget on a restart, and R seed notebooks
(--seed-notebook, kernelspec metadata.cellgate.seed) run before the kernel is handed out."""
import json
import os
import shutil
import threading
import time

import pytest

import targets as targets_mod
from jupyter_ws import KernelWS, msg_type, parent_id

HERE = os.path.dirname(os.path.abspath(__file__))
NB = os.path.join(HERE, "nbhttp")
DEBIAN_KERNELS = "/usr/share/jupyter/kernels"

# Per language: code printing "user host cwd", a long cell that prints "started", and the reply
# status each kernel gives an interrupted cell (IRkernel's own "abort"; octave_kernel answers "ok").
LANG = {
    "ir": {"identity": 'cat(Sys.info()[["user"]], Sys.info()[["nodename"]], getwd(), "\\n")',
           "sleep": 'cat("started\\n"); flush.console(); Sys.sleep(60)', "interrupted": "abort",
           "set": 'state <- "remembered"', "get": 'cat(if (exists("state")) state else "forgotten", "\\n")'},
    "octave": {"identity": ("[~, u] = system('id -un'); [~, h] = system('hostname'); "
                            "printf('%s %s %s\\n', strtrim(u), strtrim(h), pwd())"),
               "sleep": "disp('started'); fflush(stdout); pause(60)", "interrupted": "ok",
               "set": "state = 'remembered';",
               "get": "if exist('state', 'var'), disp(state), else, disp('forgotten'), end"},
}


def installed(name):
    return os.path.exists(os.path.join(DEBIAN_KERNELS, name, "kernel.json"))


def need(name):
    if not installed(name):
        pytest.skip("kernelspec %s is not installed (scripts/install-deps.sh installs it)" % name)


def add_r_spec(target, name, seed):
    """A copy of Debian's IRkernel kernelspec with a seed notebook of its own (metadata.cellgate.seed)."""
    with open(os.path.join(DEBIAN_KERNELS, "ir", "kernel.json")) as f:
        spec = json.load(f)
    d = os.path.join(target.kernels_dir, name)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(NB, seed), os.path.join(d, seed))
    spec["metadata"] = {"cellgate": {"seed": seed}}
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump(spec, f)


@pytest.fixture(scope="module")
def gw():
    t = targets_mod.jail_target("--seed-notebook", os.path.join(NB, "seed_r.ipynb"), "--seed-timeout", "60",
                                "--kernel-start-timeout", "120")
    if installed("ir"):
        add_r_spec(t, "cg-ir-spec-seed", "spec_seed_r.ipynb")
        add_r_spec(t, "cg-ir-bad-seed", "bad_seed_r.ipynb")
    t.start()
    yield t
    t.stop()


@pytest.fixture
def kernel(gw):
    made = []

    def make(name, expect=201):
        r = gw.post("api/kernels", json={"name": name}, timeout=180)
        assert r.status_code == expect, (r.status_code, r.text, gw.log_tail(80))
        if r.status_code == 201:
            made.append(r.json()["id"])
        return r.json()
    yield make
    for kid in made:
        gw.delete_kernel(kid)


def execute(gw, kid, code, timeout=60):
    r = gw.post("api/kernels/%s/execute" % kid, json={"code": code, "timeout": timeout}, timeout=timeout + 30)
    assert r.status_code == 200, r.text
    return r.json()


def stdout(res):
    return "".join(o.get("text", "") for o in res["outputs"] if o["type"] == "stream" and o["name"] == "stdout")


def test_debian_kernelspecs_are_served(gw):
    need("ir")
    need("octave")
    specs = gw.get("api/kernelspecs").json()["kernelspecs"]
    assert specs["ir"]["spec"]["language"] == "R"
    assert specs["octave"]["spec"]["language"] == "octave"
    assert specs["ir"]["spec"]["interrupt_mode"] == "signal" and specs["octave"]["spec"]["interrupt_mode"] == "signal"


@pytest.mark.parametrize("name", ["ir", "octave"])
def test_starts_jailed_with_the_default_policy_and_keeps_state(gw, kernel, name):
    need(name)
    kid = kernel(name)["id"]
    lang = LANG[name]
    res = execute(gw, kid, lang["identity"])
    assert res["status"] == "ok", res
    assert stdout(res).split()[-3:] == ["sandbox", "sandbox", "/workspace"], res
    assert execute(gw, kid, lang["set"])["status"] == "ok"
    assert "remembered" in stdout(execute(gw, kid, lang["get"]))
    # The jail's view: host secrets absent, the /usr link rule's /etc entries present.
    status = gw.jail_status(kid)
    assert status["host_uid"] != 0
    if name == "ir":
        res = execute(gw, kid, 'cat(file.exists("/etc/shadow"), file.exists("/etc/R/Renviron"), "\\n")')
        assert stdout(res).split() == ["FALSE", "TRUE"], res


@pytest.mark.parametrize("name", ["ir", "octave"])
def test_interrupt_stops_the_cell(gw, kernel, name):
    """interrupt_mode signal: POST /interrupt makes the gateway signal the jail, which passes SIGINT on."""
    need(name)
    kid = kernel(name)["id"]
    lang = LANG[name]
    kws = KernelWS(gw.url, gw.token, kid)
    try:
        msg_id = kws.send("shell", "execute_request", {"code": lang["sleep"], "silent": False, "store_history": True,
                                                         "user_expressions": {}, "allow_stdin": False,
                                                         "stop_on_error": False})
        kws.wait_for(lambda m: parent_id(m) == msg_id and msg_type(m) == "stream"
                     and "started" in m["content"]["text"], timeout=60)
        started = time.monotonic()
        r = gw.post("api/kernels/%s/interrupt" % kid)
        assert r.status_code == 204, r.text
        reply = kws.wait_for(lambda m: parent_id(m) == msg_id and msg_type(m) == "execute_reply", timeout=30)
        assert time.monotonic() - started < 30
        assert reply["content"]["status"] == lang["interrupted"], reply["content"]
        # As a notebook does, the next cell goes after the kernel is idle: until then IRkernel aborts
        # whatever reaches its shell (abort_queued_messages after an interrupted cell).
        kws.wait_for(lambda m: parent_id(m) == msg_id and msg_type(m) == "status"
                     and m["content"]["execution_state"] == "idle", timeout=30)
    finally:
        kws.close()
    res = execute(gw, kid, lang["identity"])
    assert res["status"] == "ok" and "sandbox" in stdout(res), res


def test_a_request_the_kernel_aborts_ends_at_once_and_the_kernel_keeps_its_memory(gw, kernel):
    """IRkernel aborts the requests queued behind a failed (or interrupted) cell with an execute_reply
    {"status": "aborted"} and no busy or idle on iopub. POST /execute waited for an idle that never
    came: it timed out, interrupted, and restarted the kernel (its memory lost)."""
    need("ir")
    kid = kernel("ir")["id"]
    assert execute(gw, kid, LANG["ir"]["set"])["status"] == "ok"
    kws = KernelWS(gw.url, gw.token, kid)
    try:
        failing = kws.send("shell", "execute_request", {"code": 'cat("started\\n"); flush.console(); Sys.sleep(10); stop("boom")',
                                                        "silent": False, "store_history": True, "user_expressions": {},
                                                        "allow_stdin": False, "stop_on_error": True})
        kws.wait_for(lambda m: parent_id(m) == failing and msg_type(m) == "stream", timeout=60)
        # Queued behind the failing cell: it reaches the kernel's shell well within the 10 s it sleeps.
        queued = {}
        th = threading.Thread(target=lambda: queued.update(execute(gw, kid, 'cat("ran\\n")', timeout=40)))
        th.start()
        reply = kws.wait_for(lambda m: parent_id(m) == failing and msg_type(m) == "execute_reply", timeout=60)
        assert reply["content"]["status"] == "error", reply["content"]
        th.join(timeout=90)
        assert not th.is_alive()
        # The next cell goes once the kernel is idle (IRkernel aborts whatever arrives until then).
        kws.wait_for(lambda m: parent_id(m) == failing and msg_type(m) == "status"
                     and m["content"]["execution_state"] == "idle", timeout=30)
    finally:
        kws.close()
    assert queued["status"] == "error" and "aborted" in queued.get("message", ""), queued
    assert gw.get("api/kernels/" + kid).json()["execution_state"] != "restarting"
    res = execute(gw, kid, LANG["ir"]["get"])
    assert res["status"] == "ok" and "remembered" in stdout(res), (res, "the kernel was not restarted")


@pytest.mark.parametrize("name", ["ir", "octave"])
def test_restart_forgets_and_stays_jailed(gw, kernel, name):
    need(name)
    kid = kernel(name)["id"]
    lang = LANG[name]
    execute(gw, kid, lang["set"])
    before = gw.jail_status(kid)["init_pid"]
    r = gw.post("api/kernels/%s/restart" % kid, timeout=180)
    assert r.status_code == 200, r.text
    assert gw.jail_status(kid)["init_pid"] != before, "a new jail"
    assert "forgotten" in stdout(execute(gw, kid, lang["get"]))
    assert stdout(execute(gw, kid, lang["identity"])).split()[-3:] == ["sandbox", "sandbox", "/workspace"]


def test_r_seed_runs_before_the_kernel_is_handed_out_and_after_a_restart(gw, kernel):
    need("ir")
    kid = kernel("ir")["id"]
    res = execute(gw, kid, "cat(SEEDED, SEED_PID == Sys.getpid(), '\\n')")
    assert stdout(res).split() == ["42", "TRUE"], res
    execute(gw, kid, "SEEDED <- 0")
    assert gw.post("api/kernels/%s/restart" % kid, timeout=180).status_code == 200
    assert stdout(execute(gw, kid, "cat(SEEDED, '\\n')")).split() == ["42"]


def test_r_seed_only_for_r_kernels(gw, kernel):
    need("octave")
    kid = kernel("octave")["id"]
    res = execute(gw, kid, "disp(exist('SEEDED'))")
    assert stdout(res).split() == ["0"], res


def test_kernelspec_seed_replaces_the_global_one_for_r(gw, kernel):
    need("ir")
    kid = kernel("cg-ir-spec-seed")["id"]
    res = execute(gw, kid, 'cat(SPEC_SEED, exists("SEEDED"), "\\n")')
    assert stdout(res) == "from the kernelspec FALSE \n", res


def test_failing_r_seed_fails_the_start_with_the_cell_and_the_error(gw, kernel):
    """IRkernel answers a silent execute "ok" even when the code fails, so seed cells run non-silently,
    their outputs kept from clients, and an iopub error fails the seed whatever the reply says."""
    need("ir")
    body = kernel("cg-ir-bad-seed", expect=500)
    assert "cell 2 failed" in body["message"] and "bad seed" in body["message"], body
    assert body["seed"]["notebook"] == "bad_seed_r.ipynb" and body["seed"]["cell"] == 1, body


def test_kernel_info_passes_through_as_the_kernel_sent_it(gw, kernel):
    """Debian's octave_kernel 0.32 sends implementation_version as a list. The gateway does not rewrite
    it: Jupyter Server forwards kernel_info_reply untouched, and neither reference client checks the
    field (jupyter_client reads protocol_version; @jupyterlab/services validates the header and iopub
    content only, and resolves `info` with the content as sent). A gateway that rewrote kernels'
    replies would hide a kernel's bug from the people who can fix it, and differ from the server that
    defines the API."""
    need("octave")
    kid = kernel("octave")["id"]
    kws = KernelWS(gw.url, gw.token, kid)
    try:
        reply = kws.request("shell", "kernel_info_request", {}, timeout=60)
    finally:
        kws.close()
    content = reply["content"]
    assert content["status"] == "ok" and content["language_info"]["name"] == "octave", content
    assert content["protocol_version"].startswith("5."), content
    # Exactly what the kernel's class says, a tuple on the wire as a list (0.32) or a string (later).
    from octave_kernel.kernel import OctaveKernel
    sent = OctaveKernel.implementation_version
    assert content["implementation_version"] == (list(sent) if isinstance(sent, tuple) else sent), content


def test_r_seed_outputs_reach_no_client(gw, kernel):
    """A restart re-runs the seed while a client is connected: its cells are the gateway's own, so the
    client sees none of their messages (no execute_input, no stream), and its own cell counts from 1."""
    need("ir")
    kid = kernel("ir")["id"]
    kws = KernelWS(gw.url, gw.token, kid)
    try:
        assert gw.post("api/kernels/%s/restart" % kid, timeout=180).status_code == 200
        r = kws.execute('cat(SEEDED, "\\n")', timeout=60)
        assert r.reply["content"]["status"] == "ok" and r.stdout().split() == ["42"], r.reply
        assert r.reply["content"]["execution_count"] == 1, r.reply
        seen = json.dumps(kws.seen)  # every message the client received, whatever its parent
        assert "by the seed" not in seen and "SEED_PID" not in seen, seen
    finally:
        kws.close()
