# SPDX-License-Identifier: BSD-3-Clause
# xpython through the gateway: `cellgate serve` (jail spawner, ipc) lists the installed xpython
# kernelspec, starts it jailed, runs cells over the kernel channels WebSocket, interrupts a running
# cell through REST (interrupt_mode signal), and deletes it.
# Needs root and scripts/install-xpython.sh (the installed kernelspec); exits 77 without root.
# Env: CELLGATE_BUILD_DIR.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

import requests
import websocket

BUILD = os.environ.get("CELLGATE_BUILD_DIR", "")
TIMEOUT = 60  # seconds, for every single wait; no assertion is about speed
INSTALLED_SPEC = "/usr/local/share/jupyter/kernels/xpython/kernel.json"


class GatewayXPythonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cgxg", dir="/tmp")
        cls.token = uuid.uuid4().hex
        cls.log = open(os.path.join(cls.tmp, "gateway.log"), "w+")
        cls.proc = subprocess.Popen(
            [os.path.join(BUILD, "bin", "cellgate"), "serve", "--port", "0", "--token", cls.token,
             "--data-dir", os.path.join(cls.tmp, "data"), "--runtime-dir", os.path.join(cls.tmp, "r"), "--workspace-volume", "off"],
            stdout=subprocess.PIPE, stderr=cls.log, text=True)
        line = cls.proc.stdout.readline()  # "cellgate serving at http://127.0.0.1:PORT/?token=..."
        m = re.search(r"http://([0-9.]+:\d+)/", line)
        if not m:
            cls.tearDownClass()
            raise RuntimeError(f"gateway did not start: {line!r}")
        cls.base = f"http://{m.group(1)}"
        cls.ws_base = f"ws://{m.group(1)}"
        cls.headers = {"Authorization": f"token {cls.token}"}

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        try:
            cls.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait()
        cls.log.seek(0)
        sys.stderr.write(cls.log.read()[-4000:])
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _msg(self, msg_type, content, session):
        return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "test",
                           "session": session, "date": "", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}

    def _execute(self, ws, session, code):
        """Sends one execute_request; returns (reply content, [iopub messages]) for it."""
        req = self._msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                            "user_expressions": {}, "allow_stdin": False}, session)
        ws.send(json.dumps(req))
        return req["header"]["msg_id"]

    def _collect(self, ws, msg_id):
        reply, iopub, idle = None, [], False
        deadline = time.monotonic() + TIMEOUT
        while reply is None or not idle:
            self.assertLess(time.monotonic(), deadline, "no reply/idle in time")
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["channel"] == "shell":
                reply = msg["content"]
            elif msg["channel"] == "iopub":
                iopub.append(msg)
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    idle = True
        return reply, iopub

    def test_xpython_jailed_through_gateway(self):
        specs = requests.get(f"{self.base}/api/kernelspecs", headers=self.headers, timeout=TIMEOUT).json()
        self.assertIn("xpython", specs["kernelspecs"])
        spec = specs["kernelspecs"]["xpython"]["spec"]
        self.assertEqual(spec["display_name"], "Python 3 (xeus-python)")
        self.assertEqual(spec["interrupt_mode"], "signal")

        r = requests.post(f"{self.base}/api/kernels", json={"name": "xpython"}, headers=self.headers, timeout=TIMEOUT)
        self.assertEqual(r.status_code, 201, r.text)
        kid = r.json()["id"]
        session = uuid.uuid4().hex
        ws = websocket.create_connection(f"{self.ws_base}/api/kernels/{kid}/channels?session_id={session}",
                                         header=[f"Authorization: token {self.token}"], timeout=TIMEOUT)
        try:
            reply, iopub = self._collect(ws, self._execute(ws, session, "import os; print(os.getuid(), os.getcwd()); 6*7"))
            self.assertEqual(reply["status"], "ok")
            out = "".join(m["content"]["text"] for m in iopub if m["msg_type"] == "stream")
            # the jail's sandbox user, in its workspace (ipc_dir.h must restore the cwd after binding)
            self.assertEqual(out.split(), ["1000", "/workspace"])
            results = [m["content"]["data"]["text/plain"] for m in iopub if m["msg_type"] == "execute_result"]
            self.assertEqual(results, ["42"])

            reply, _ = self._collect(ws, self._execute(ws, session, "1/0"))
            self.assertEqual((reply["status"], reply["ename"]), ("error", "ZeroDivisionError"))

            msg_id = self._execute(ws, session, "import time\nfor _ in range(600): time.sleep(0.1)")
            deadline = time.monotonic() + TIMEOUT
            while True:  # until the cell runs
                msg = json.loads(ws.recv())
                if msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
                    break
                self.assertLess(time.monotonic(), deadline)
            time.sleep(0.3)
            r = requests.post(f"{self.base}/api/kernels/{kid}/interrupt", headers=self.headers, timeout=TIMEOUT)
            self.assertEqual(r.status_code, 204, r.text)
            reply, _ = self._collect(ws, msg_id)
            self.assertEqual((reply["status"], reply["ename"]), ("error", "KeyboardInterrupt"))

            reply, _ = self._collect(ws, self._execute(ws, session, "print('alive')"))
            self.assertEqual(reply["status"], "ok")
        finally:
            ws.close()
        r = requests.delete(f"{self.base}/api/kernels/{kid}", headers=self.headers, timeout=TIMEOUT)
        self.assertEqual(r.status_code, 204, r.text)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: the jail spawner needs root")
        sys.exit(77)
    if not os.path.exists(INSTALLED_SPEC):
        print(f"{INSTALLED_SPEC} missing: run scripts/install-xpython.sh {BUILD}")
        sys.exit(1)
    unittest.main(verbosity=2)
