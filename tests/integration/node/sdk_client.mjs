// SPDX-License-Identifier: BSD-3-Clause
// sdk_client: drives cellgate's MCP server with the official TypeScript SDK client, over stdio or HTTP.
// usage: node sdk_client.mjs stdio|tools CELLGATE_BINARY BASE_URL TOKEN | node sdk_client.mjs http MCP_URL TOKEN
// "tools" (over stdio) checks the file, process and snapshot tools, which need the REST tools/* and
// workspace snapshot endpoints.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const EXPECTED_TOOLS = ['edit', 'execute', 'journal', 'list_kernels', 'list_snapshots', 'process', 'publish_artifact',
                        'read', 'restore', 'snapshot', 'start_kernel', 'write'];

function text(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  console.log(`${name} -> isError=${result.isError} ${JSON.stringify(text(result)).slice(0, 200)}`);
  return result;
}

// The file, process and snapshot tools, through the REST shapes of /tools/* and /api/workspaces.
async function checkFileTools(client) {
  const ws = 'mcp-e2e';
  const started = await call(client, 'start_kernel', { workspace: ws });
  assert.equal(started.isError, false, text(started));
  const k = /kernel_id: (\S+)/.exec(text(started))[1];

  const wrote = await call(client, 'write', { kernel_id: k, path: 'notes/a.txt', content: 'one\ntwo\nthree\n' });
  assert.equal(wrote.isError, false, text(wrote));
  assert.match(text(wrote), /Wrote 14 bytes/);
  assert.equal(text(await call(client, 'read', { kernel_id: k, path: 'notes/a.txt' })), 'one\ntwo\nthree\n');
  const page = text(await call(client, 'read', { kernel_id: k, path: 'notes/a.txt', offset: 1, limit: 1 }));
  assert.match(page, /^two\n\[showing lines 2-2 of 3; next offset 2\]/);

  const edited = await call(client, 'edit', { kernel_id: k, path: 'notes/a.txt', old_string: 'two', new_string: 'TWO' });
  assert.equal(edited.isError, false, text(edited));
  assert.match(text(edited), /1 replacement/);
  const conflict = await call(client, 'edit', { kernel_id: k, path: 'notes/a.txt', old_string: 'absent', new_string: 'x' });
  assert.equal(conflict.isError, true);
  assert.match(text(conflict), /HTTP 409/);
  const diff = '--- a/notes/a.txt\n+++ b/notes/a.txt\n@@ -1,3 +1,3 @@\n one\n TWO\n-three\n+3\n';
  const patched = await call(client, 'edit', { kernel_id: k, path: 'notes/a.txt', diff });
  assert.equal(patched.isError, false, text(patched));

  const seen = await call(client, 'execute', { kernel_id: k, code: "print(open('notes/a.txt').read(), end='')" });
  assert.equal(text(seen).split('[workspace')[0], 'one\nTWO\n3\n');
  const made = await call(client, 'execute', { kernel_id: k, code: "open('made.txt', 'w').write('x')" });
  assert.match(text(made), /\[workspace mcp-e2e added: [^\]]*\bmade\.txt\b[^\]]*\(snapshot \S+\)\]/);
  // The kernel's journal through MCP: what ran, by whom, by which path.
  const journal = text(await call(client, 'journal', { kernel_id: k }));
  assert.match(journal, /via mcp/);
  assert.ok(journal.includes("open('made.txt', 'w').write('x')"), journal);
  const proc = await call(client, 'process',
                          { kernel_id: k, command: 'sh', args: ['-c', 'cat notes/a.txt; cat >&2; exit 3'], stdin: 'err' });
  assert.equal(proc.isError, false);
  assert.equal(text(proc), 'exit code: 3\n--- stdout ---\none\nTWO\n3\n\n--- stderr ---\nerr');
  const slow = await call(client, 'process', { kernel_id: k, command: 'sleep', args: ['30'], timeout: 1 });
  assert.equal(slow.isError, true);
  assert.match(text(slow), /timed out/);

  const snap = await call(client, 'snapshot', { workspace: ws, label: 'before' });
  assert.equal(snap.isError, false, text(snap));
  const snapId = /snapshot_id: (\S+)/.exec(text(snap))[1];
  await call(client, 'write', { kernel_id: k, path: 'b.txt', content: 'new' });
  assert.ok(text(await call(client, 'list_snapshots', { workspace: ws })).includes(snapId));
  const restored = await call(client, 'restore', { workspace: ws, snapshot_id: snapId });
  assert.equal(restored.isError, false, text(restored));
  assert.match(text(restored), /b\.txt/);
  assert.equal((await call(client, 'read', { kernel_id: k, path: 'b.txt' })).isError, true);
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  let transport;
  if (mode === 'stdio' || mode === 'tools') {
    const [binary, url, token] = rest;
    transport = new StdioClientTransport({
      command: binary,
      args: ['mcp', '--url', url],
      env: { CELLGATE_TOKEN: token },
      stderr: 'inherit',
    });
  } else if (mode === 'http') {
    const [url, token] = rest;
    transport = new StreamableHTTPClientTransport(new URL(url),
                                                  { requestInit: { headers: { Authorization: `token ${token}` } } });
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  const client = new Client({ name: 'cellgate-e2e', version: '1.0.0' });
  await client.connect(transport);

  // initialize: the SDK asks for its newest version; cellgate answers with one both speak.
  assert.equal(client.getServerVersion().name, 'cellgate');
  assert.ok(client.getServerCapabilities().tools, 'tools capability advertised');
  if (mode === 'http') {
    assert.match(transport.sessionId ?? '', /^[0-9a-f]{32}$/, 'Mcp-Session-Id issued at initialize');
    assert.equal(transport.protocolVersion, '2025-03-26');
  }

  if (mode === 'tools') {
    await checkFileTools(client);
    await client.close();
    console.log('mcp e2e of the file, process and snapshot tools: ok');
    return;
  }

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
  for (const t of tools) assert.equal(t.inputSchema.type, 'object', `${t.name} has an object schema`);

  const started = await call(client, 'start_kernel', {});
  assert.equal(started.isError, false, text(started));
  const kernelId = /kernel_id: (\S+)/.exec(text(started))?.[1];
  assert.ok(kernelId, 'start_kernel names the kernel');

  const assign = await call(client, 'execute', { kernel_id: kernelId, code: 'x = 21*2' });
  assert.equal(assign.isError, false, text(assign));
  const printed = await call(client, 'execute', { kernel_id: kernelId, code: 'print(x)' });
  assert.equal(printed.isError, false, text(printed));
  assert.equal(text(printed).trim(), '42', 'state persists between execute calls');

  const plot = await call(client, 'execute', {
    kernel_id: kernelId,
    code: 'import matplotlib\nmatplotlib.use("module://matplotlib_inline.backend_inline")\n' +
          'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]); plt.show()',
  });
  assert.equal(plot.isError, false, text(plot));
  const image = plot.content.find((c) => c.type === 'image');
  assert.ok(image, 'a plot comes back as image content');
  assert.equal(image.mimeType, 'image/png');
  assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG');

  const failed = await call(client, 'execute', { kernel_id: kernelId, code: '1/0' });
  assert.equal(failed.isError, true);
  assert.match(text(failed), /^ZeroDivisionError: division by zero/);
  assert.doesNotMatch(text(failed), /\x1b\[/, 'no ANSI escapes in the traceback');

  const listed = await call(client, 'list_kernels', {});
  assert.equal(listed.isError, false);
  assert.ok(text(listed).includes(kernelId), 'list_kernels shows the new kernel');

  const missing = await call(client, 'execute', { kernel_id: 'no-such-kernel', code: '1' });
  assert.equal(missing.isError, true);
  assert.match(text(missing), /HTTP 404/);

  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /-32602|Unknown tool/);

  if (mode === 'http') await transport.terminateSession();
  await client.close();
  console.log(`mcp e2e over ${mode}: ok`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
