# SPDX-License-Identifier: Apache-2.0
"""notebook-http beyond Python, with real jailed kernels: Debian's IRkernel (Kernel Gateway's R support:
the cell decodes REQUEST with jsonlite) and a bash kernel (metakernel's BashKernel). REQUEST reaches
each kernel as a string literal of its own language, so no byte a client sends is ever code: the
payloads below carry every printable character and the interpolations bash ("$(..)", backticks), perl,
ruby and R quote-breaking would evaluate. Before the fix, REQUEST was a JSON string spliced into
`REQUEST="..."`, which bash evaluates: the bash attack ran `touch` in the pool kernel."""
import base64
import json
import os
import re

import pytest
import requests

import targets as targets_mod
from test_nbhttp import NotebookHttpTarget

HERE = os.path.dirname(os.path.abspath(__file__))
NB = os.path.join(HERE, "nbhttp")
TEST_KERNELS_SRC = os.path.normpath(os.path.join(HERE, "..", "isolation", "kernels"))
TEST_KERNELS = "/opt/cellgate-test-kernels"

TOUCH = "touch /tmp/pwned"
ATTACKS = [
    "$(%s)" % TOUCH, "`%s`" % TOUCH, "${IFS}$((6*7))",                      # bash
    "@{[ system('%s') ]}" % TOUCH, "${\\ system('%s')}" % TOUCH,           # perl
    "#{system('%s')}" % TOUCH,                                             # ruby
    "\"); system(\"%s\"); (\"" % TOUCH, "'); system('%s'); ('" % TOUCH,    # quote breakers (R, octave)
    "\\\"); system(\"%s\") #" % TOUCH, "'\\''; %s; '\\''" % TOUCH,
    "\\u0041 \\x41 \\N{DIGIT ONE} %s %d \\",
]
PAYLOAD = "".join(chr(c) for c in range(0x20, 0x7f)) + "\t\n\r\x01\x1b\x7f" + " ".join(ATTACKS) + " é ✓ 😀"


def installed(name):
    return os.path.exists(os.path.join("/usr/share/jupyter/kernels", name, "kernel.json"))


def serve(notebook, kernels=None):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    t = NotebookHttpTarget(path, spawner="jail",
                           extra_args=["--notebook-http", notebook, "--notebook-http-pool", "1",
                                       "--notebook-http-timeout", "60", "--kernel-start-timeout", "120",
                                       "--seed-timeout", "60"])
    for name, spec in (kernels or {}).items():
        d = os.path.join(t.kernels_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(spec, f)
    return t.start(timeout=180)


def bash_kernelspec(tmp):
    policy = os.path.join(tmp, "bash-policy.json")
    with open(policy, "w") as f:
        json.dump({"ro_binds": ["%s:%s" % (TEST_KERNELS_SRC, TEST_KERNELS)]}, f)
    return {"argv": ["/usr/bin/python3", TEST_KERNELS + "/metakernel_bash.py", "-f", "{connection_file}"],
            "display_name": "Bash (metakernel)", "language": "bash", "metadata": {"cellgate": {"policy": policy}}}


def post(t, path, text):
    r = t.post(path, data=text.encode(), headers={"Content-Type": "text/plain; charset=utf-8"}, timeout=90)
    return r.status_code, r.content.decode("utf-8")


def assert_not_pwned(t):
    # Matched on the value: metakernel's bash echoes the cell's code before its output.
    r = t.get("pwned", timeout=90)
    assert r.status_code == 200 and re.search(r"pwned=FALSE\s*$", r.text), (r.status_code, r.text)


def bash_request(text):
    m = re.search(r"^B64=([A-Za-z0-9+/=]+)\s*$", text, re.M)
    assert m, text
    return json.loads(base64.b64decode(m.group(1)))


@pytest.fixture(scope="module")
def r_api():
    if not installed("ir"):
        pytest.skip("IRkernel is not installed (scripts/install-deps.sh installs it)")
    t = serve(os.path.join(NB, "api_r.ipynb"))
    yield t
    t.stop()


@pytest.fixture(scope="module")
def bash_api(tmp_path_factory):
    pytest.importorskip("metakernel")
    t = serve(os.path.join(NB, "api_bash.ipynb"), {"cg-bash": bash_kernelspec(str(tmp_path_factory.mktemp("bash")))})
    yield t
    t.stop()


def test_r_endpoint_reads_request_with_jsonlite(r_api):
    r = r_api.get("hello", timeout=90)
    assert r.status_code == 200 and r.text == "hello from R\n", r.text
    assert post(r_api, "echo", "plain words") == (200, "plain words")


@pytest.mark.parametrize("payload", ATTACKS + [PAYLOAD])
def test_r_request_is_data_whatever_it_holds(r_api, payload):
    assert post(r_api, "echo", payload) == (200, payload)
    assert_not_pwned(r_api)


def test_bash_endpoint_reads_request(bash_api):
    r = bash_api.get("hello", timeout=90)
    assert r.status_code == 200 and re.search(r"^hello from bash\s*$", r.text, re.M), r.text



@pytest.mark.parametrize("payload", ATTACKS + [PAYLOAD])
def test_bash_request_is_data_whatever_it_holds(bash_api, payload):
    status, text = post(bash_api, "echo", payload)
    assert_not_pwned(bash_api)
    assert status == 200, text
    assert bash_request(text)["body"] == payload, text


def test_a_language_without_a_checked_literal_is_refused(tmp_path):
    """No literal rule, no notebook-http: one line at start, not a server that splices REQUEST."""
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    nb = json.load(open(os.path.join(NB, "api_bash.ipynb")))
    nb["metadata"]["kernelspec"]["language"] = nb["metadata"]["language_info"]["name"] = "julia"
    nb["metadata"]["kernelspec"]["name"] = "python3"
    p = tmp_path / "api_julia.ipynb"
    p.write_text(json.dumps(nb))
    t = NotebookHttpTarget(path, spawner="jail", extra_args=["--notebook-http", str(p)])
    with pytest.raises(RuntimeError) as e:
        t.start(timeout=60)
    assert "cannot pass REQUEST to a julia kernel" in str(e.value), str(e.value)
