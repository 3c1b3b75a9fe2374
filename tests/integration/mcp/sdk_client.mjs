// SPDX-License-Identifier: BSD-3-Clause
// sdk_client: drives cellgate's MCP server with the official TypeScript SDK client, over stdio or HTTP.
// usage: node sdk_client.mjs stdio CELLGATE_BINARY BASE_URL TOKEN | node sdk_client.mjs http MCP_URL TOKEN
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const EXPECTED_TOOLS = ['edit', 'execute', 'list_kernels', 'list_snapshots', 'process', 'read', 'restore',
                        'snapshot', 'start_kernel', 'write'];

function text(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  console.log(`${name} -> isError=${result.isError} ${JSON.stringify(text(result)).slice(0, 200)}`);
  return result;
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  let transport;
  if (mode === 'stdio') {
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
