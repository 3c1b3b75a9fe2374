# SPDX-License-Identifier: Apache-2.0
# roundtrip: one kernel of each installed kernelspec through the REST API and the kernel WebSocket,
# against the packaged gateway. usage: roundtrip.py URL TOKEN KERNELSPEC...
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from jupyter_ws import KernelWS, msg_type  # noqa: E402


def call(url, token, method, path, body=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "token " + token})
    with urllib.request.urlopen(req, timeout=120) as r:
        text = r.read()
        return r.status, json.loads(text) if text else None


def main():
    url, token, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    _, kernelspecs = call(url, token, "GET", "/api/kernelspecs")
    for name in specs:
        assert name in kernelspecs["kernelspecs"], f"kernelspec {name} not offered: {sorted(kernelspecs['kernelspecs'])}"
    xp = kernelspecs["kernelspecs"].get("xpython")
    if xp:
        argv0 = xp["spec"]["argv"][0]
        assert argv0 == "/usr/lib/cellgate/cellgate-xpython", f"xpython kernelspec runs {argv0}"
    for name in specs:
        status, model = call(url, token, "POST", "/api/kernels", {"name": name})
        assert status == 201, (status, model)
        kid = model["id"]
        ws = KernelWS(url, token, kid)
        try:
            res = ws.execute("import os; (6 * 7, os.getuid(), os.path.exists('/var/lib/cellgate'))")
            results = [m for m in res.iopub if msg_type(m) == "execute_result"]
            assert res.reply["content"]["status"] == "ok", res.reply["content"]
            text = results[0]["content"]["data"]["text/plain"]
            # 42, inside the jail's own uid, and the host's data dir is not in the jail.
            assert text.replace(" ", "") == "(42,1000,False)", text
            print(f"{name}: kernel {kid} answered {text}")
        finally:
            ws.close()
        status, _ = call(url, token, "DELETE", f"/api/kernels/{kid}")
        assert status == 204, status
        print(kid)


if __name__ == "__main__":
    main()
