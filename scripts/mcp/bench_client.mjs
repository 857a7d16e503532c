// Benchmark client using the official TypeScript SDK (@modelcontextprotocol/sdk): the same
// measurements as benches/mcp.rs. Usage:
//   node bench_client.mjs (stdio FIXTURE_PATH | http URL) CALLS SESSIONS
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, target, callsArg, sessionsArg] = process.argv.slice(2);
const calls = Number(callsArg);
const sessions = Number(sessionsArg);

function transport() {
  return mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: [], stderr: 'ignore' })
    : new StreamableHTTPClientTransport(new URL(target));
}

async function open() {
  const client = new Client({ name: 'bench-ts', version: '0.0.0' });
  await client.connect(transport());
  await client.listTools();
  return client;
}

const opens = [];
for (let i = 0; i < sessions; i++) {
  const started = performance.now();
  const client = await open();
  opens.push(performance.now() - started);
  await client.close();
}
const client = await open();
await client.callTool({ name: 'echo', arguments: { text: 'warm' } });
const started = performance.now();
for (let i = 0; i < calls; i++) {
  await client.callTool({ name: 'echo', arguments: { text: 'ping' } });
}
const total = performance.now() - started;
await client.close();
opens.sort((a, b) => a - b);
console.log(JSON.stringify({
  client: 'TypeScript SDK',
  transport: mode,
  open_list_ms: opens[Math.floor(opens.length / 2)],
  per_call_ms: total / calls,
  calls,
  sessions,
}));
