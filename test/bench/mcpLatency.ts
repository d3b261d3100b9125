/**
 * One MCP tool call (`read`, through the SDK client over loopback) against the REST GET it wraps, on
 * one server, alternating: what the protocol layer (JSON-RPC, a server per request, the SDK on
 * both sides) adds to a read. Not part of `npm run bench`: `npx tsx test/bench/mcpLatency.ts`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestServer, api } from '../support/server.js';
const s = await startTestServer();
await api(`${s.url}/api/v1/knowledge/items/notes/a.md`, { method: 'PUT', key: s.adminKey, body: { content: 'hello '.repeat(300) } });
const client = new Client({ name: 't', version: '1' });
await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${s.adminKey}` } } }));
const pct = (a: number[], p: number): string => ([...a].sort((x, y) => x - y)[Math.floor(a.length * p)] ?? NaN).toFixed(2);
for (let round = 0; round < 2; round++) {
  const m: number[] = [], r: number[] = [];
  for (let i = 0; i < 500; i++) {
    let t = performance.now(); await client.callTool({ name: 'read', arguments: { path: 'notes/a.md' } }); m.push(performance.now() - t);
    t = performance.now(); await api(`${s.url}/api/v1/knowledge/items/notes/a.md`, { key: s.adminKey }); r.push(performance.now() - t);
  }
  console.log(`round ${round}: MCP read p50 ${pct(m, 0.5)} ms p95 ${pct(m, 0.95)} | REST GET p50 ${pct(r, 0.5)} ms p95 ${pct(r, 0.95)}`);
}
await client.close(); await s.close();
