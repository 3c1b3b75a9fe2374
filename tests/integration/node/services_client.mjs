// SPDX-License-Identifier: BSD-3-Clause
// services_client: JupyterLab's own client library (@jupyterlab/services, from npm) against cellgate:
// kernelspecs, kernels (execute, stdin, interrupt, restart, shutdown), sessions, over the kernel
// WebSocket protocol the library negotiates. Reads CELLGATE_URL and CELLGATE_TOKEN (with_gateway.sh).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { ServerConnection, KernelManager, KernelSpecManager, SessionManager } = require('@jupyterlab/services');
const WebSocket = require('ws');

const url = process.env.CELLGATE_URL;
const token = process.env.CELLGATE_TOKEN;
assert.ok(url && token, 'CELLGATE_URL and CELLGATE_TOKEN must be set');
const serverSettings = ServerConnection.makeSettings({
  baseUrl: url, wsUrl: url.replace(/^http/, 'ws'), token, appendToken: true,
  WebSocket, fetch, Request, Headers,
});

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Runs code and gathers what a notebook cell would show: the reply and every iopub output.
async function run(kernel, code, { onStdin } = {}) {
  const future = kernel.requestExecute({ code, allow_stdin: Boolean(onStdin) });
  const outputs = [];
  future.onIOPub = (msg) => {
    if (['stream', 'execute_result', 'display_data', 'error'].includes(msg.header.msg_type)) outputs.push(msg);
  };
  if (onStdin) future.onStdin = onStdin;
  const reply = await withTimeout(future.done, 60000, code);
  const stdout = outputs.filter((m) => m.header.msg_type === 'stream').map((m) => m.content.text).join('');
  const result = outputs.find((m) => m.header.msg_type === 'execute_result');
  return { reply, stdout, result: result ? result.content.data['text/plain'] : undefined, outputs };
}

async function main() {
  const specs = new KernelSpecManager({ serverSettings });
  await specs.ready;
  await specs.refreshSpecs();
  assert.ok(specs.specs.kernelspecs.python3, 'python3 kernelspec listed');
  assert.equal(specs.specs.default, 'python3');
  console.log('kernelspecs:', Object.keys(specs.specs.kernelspecs).join(', '));

  const kernels = new KernelManager({ serverSettings });
  await kernels.ready;
  const kernel = await kernels.startNew({ name: 'python3' });
  const info = await withTimeout(kernel.info, 60000, 'kernel_info');
  assert.equal(info.language_info.name, 'python');
  console.log(`kernel ${kernel.id} ready over ${kernel.serverSettings.serializer ? 'a custom serializer' : 'the default serializer'}`);

  const first = await run(kernel, 'x = 6 * 7\nprint("hello from the jail")\nx');
  assert.equal(first.reply.content.status, 'ok');
  assert.equal(first.stdout, 'hello from the jail\n');
  assert.equal(first.result, '42');

  const asked = await run(kernel, 'name = input("who? ")\nprint("hi", name)', {
    onStdin: (msg) => {
      assert.equal(msg.header.msg_type, 'input_request');
      kernel.sendInputReply({ status: 'ok', value: 'cellgate' }, msg.header);
    },
  });
  assert.match(asked.stdout, /hi cellgate/);

  const binary = await run(kernel, 'import numpy as np\nfloat(np.arange(10).sum())');
  assert.equal(binary.result, '45.0');

  const sleeping = kernel.requestExecute({ code: 'import time\ntime.sleep(60)' });
  await new Promise((r) => setTimeout(r, 1500));
  await kernel.interrupt();
  const interrupted = await withTimeout(sleeping.done, 30000, 'interrupted sleep');
  assert.equal(interrupted.content.status, 'error');
  assert.equal(interrupted.content.ename, 'KeyboardInterrupt');
  console.log('interrupt: KeyboardInterrupt');

  const statuses = [];
  kernel.statusChanged.connect((_, status) => statuses.push(status));
  await kernel.restart();
  await withTimeout(kernel.info, 60000, 'kernel_info after restart');
  // jupyter_server announces "restarting" only for automatic restarts; JupyterLab reads it as one.
  assert.ok(!statuses.includes('autorestarting'), `a manual restart looked automatic: ${statuses}`);
  const after = await run(kernel, 'x');
  assert.equal(after.reply.content.status, 'error');
  assert.equal(after.reply.content.ename, 'NameError');
  console.log('restart: memory cleared');

  await kernels.refreshRunning();
  assert.ok([...kernels.running()].some((k) => k.id === kernel.id), 'running kernel listed');
  await kernel.shutdown();
  await kernels.refreshRunning();
  assert.ok(![...kernels.running()].some((k) => k.id === kernel.id), 'shut-down kernel gone');

  const sessions = new SessionManager({ serverSettings, kernelManager: kernels });
  await sessions.ready;
  const session = await sessions.startNew({ path: 'work/analysis.ipynb', type: 'notebook', name: 'analysis.ipynb',
                                            kernel: { name: 'python3' } });
  await withTimeout(session.kernel.info, 60000, 'session kernel_info');
  assert.equal((await run(session.kernel, '1 + 1')).result, '2');
  await session.setPath('work/renamed.ipynb');
  await sessions.refreshRunning();
  const listed = [...sessions.running()].find((s) => s.id === session.id);
  assert.ok(listed, 'session listed');
  assert.equal(listed.path, 'work/renamed.ipynb');
  await session.shutdown();
  await sessions.refreshRunning();
  assert.ok(![...sessions.running()].some((s) => s.id === session.id), 'session gone after shutdown');
  console.log('sessions: start, rename, list, shutdown');

  kernels.dispose();
  sessions.dispose();
  specs.dispose();
  console.log('ok');
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
