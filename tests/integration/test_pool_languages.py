# SPDX-License-Identifier: Apache-2.0
"""The warm pool beyond Python: an IRkernel (Debian's r-cran-irkernel) pre-started in its jail and
claimed by an owner. What the claim runs in R is policy in the kernelspec (metadata.cellgate.claim,
with {env} replaced by an R string literal of the variables); the gateway's mechanism mounts the
workspace, writes the limits, runs the claim as a hidden cell and judges it, in any language."""
import json
import os
import time

import pytest

from test_pool import User, claimed_from_pool, make_gateway  # noqa: F401 (User: the users' client)

DEBIAN_IR = "/usr/share/jupyter/kernels/ir/kernel.json"
R_CLAIM = ('local({ env <- jsonlite::fromJSON({env}); if (length(env)) do.call(Sys.setenv, env); '
           'setwd("/workspace") })')


def ir_spec(claim, warmup="invisible(0)"):
    with open(DEBIAN_IR) as f:
        spec = json.load(f)
    spec["metadata"] = {"cellgate": {"claim": claim, "warmup": warmup}}
    return spec


@pytest.fixture(scope="module")
def r_pool(tmp_path_factory):
    if not os.path.exists(DEBIAN_IR):
        pytest.skip("IRkernel is not installed (scripts/install-deps.sh installs it)")
    specs = {"cg-ir-pool": ir_spec(R_CLAIM),
             # Fails in R: IRkernel would answer a silent execute of it "ok".
             "cg-ir-bad-claim": ir_spec('stop("claim refused"); {env}')}

    specs_dir = tmp_path_factory.mktemp("specs")
    for name, spec in specs.items():
        os.makedirs(specs_dir / name)
        (specs_dir / name / "kernel.json").write_text(json.dumps(spec))
    t, users = make_gateway("--kernelspec-dir", str(specs_dir), "--pool", "cg-ir-pool=1",
                            "--pool", "cg-ir-bad-claim=1", "--kernel-start-timeout", "120")
    yield t, users
    t.stop()


def wait_ready(t, spec, n=1, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = t.get("api/status").json()["pool"][spec]
        if s["ready"] >= n:
            return s
        time.sleep(0.5)
    raise AssertionError("pool %s never reached %d ready\n%s" % (spec, n, t.log_tail()))


def test_r_kernel_is_claimed_with_workspace_env_and_cwd(r_pool):
    t, users = r_pool
    alice = users["alice"]
    wait_ready(t, "cg-ir-pool")
    assert alice.api("POST", "api/workspaces", json={"name": "rw"}).status_code == 201
    r = alice.api("PUT", "api/workspaces/rw/files/hello.txt", data=b"hi from the api")
    assert r.status_code in (200, 201, 204), r.text
    k = alice.start_kernel(name="cg-ir-pool", workspace="rw", env={"KERNEL_COURSE": "stats 101"})
    kid = k["id"]
    assert claimed_from_pool(t, kid), t.log_tail(40)
    kws = alice.ws(kid)
    try:
        r = kws.execute('cat(getwd(), readLines("hello.txt"), Sys.getenv("KERNEL_COURSE"), Sys.getenv("KERNEL_USERNAME"), '
                        'Sys.getenv("KERNEL_WORKSPACE"), Sys.getenv("KERNEL_ID"), sep = "\\n")\n'
                        'writeLines("written in R", "from_r.txt")')
        assert r.reply["content"]["status"] == "ok", r.reply
        assert r.stdout().splitlines() == ["/workspace", "hi from the api", "stats 101", "alice", "rw", kid], r.stdout()
        # The warm-up and the claim were the gateway's hidden cells without history (IRkernel counts a
        # cell only when it is not silent and stores history): the owner's first cell is In [1].
        assert r.reply["content"]["execution_count"] == 1, r.reply
    finally:
        kws.close()
    got = alice.api("GET", "api/workspaces/rw/files/from_r.txt")
    assert got.status_code == 200 and got.content == b"written in R\n"
    alice.api("DELETE", "api/kernels/" + kid)


def test_failing_r_claim_is_detected_and_starts_cold(r_pool):
    t, users = r_pool
    bob = users["bob"]
    wait_ready(t, "cg-ir-bad-claim")
    k = bob.start_kernel(name="cg-ir-bad-claim")
    assert not claimed_from_pool(t, k["id"]), "a claim whose R code failed must not hand the kernel out"
    assert "claim refused" in t.log_tail(200)
    kws = bob.ws(k["id"])
    try:
        r = kws.execute('cat(getwd(), "\\n")')
        assert r.stdout().split() == ["/workspace"], r.stdout()
    finally:
        kws.close()
    bob.api("DELETE", "api/kernels/" + k["id"])


def test_pool_without_claim_code_is_a_config_error(tmp_path):
    """A kernelspec of another language that declares no claim cannot be pooled: one line at start."""
    if not os.path.exists(DEBIAN_IR):
        pytest.skip("IRkernel is not installed")
    import targets as targets_mod
    path, why = targets_mod.cellgate_binary()
    t = targets_mod.CellgateTarget(path, spawner="jail", extra_args=["--pool", "ir=1"])
    with pytest.raises(RuntimeError) as e:
        t.start()
    assert "kernelspec ir (R) declares no metadata.cellgate.claim" in str(e.value), str(e.value)
