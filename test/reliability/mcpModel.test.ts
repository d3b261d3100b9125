import { expect } from 'chai';
import fc from 'fast-check';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { api, startTestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { urlOf } from '../http/adminApi.js';

/**
 * No MCP tool or resource ever shows an item its key may not read, checked against a model.
 * fast-check draws items (each with its own read permission or `inherit`) in folders some of
 * which get a read rule; then, for every role, what `GET /api/v1/knowledge` shows that role is
 * the truth, and MCP `list` (paged), `resources/list` (paged), `search`, `read`, `history` and
 * `resources/read` must show exactly that: nothing missing, nothing extra.
 *
 * MCP_MODEL_RUNS (default 5) sets the number of drawn stores; MCP_MODEL_SEED replays one.
 */
const RUNS = Number(process.env.MCP_MODEL_RUNS ?? 5);
const SEED = process.env.MCP_MODEL_SEED === undefined ? undefined : Number(process.env.MCP_MODEL_SEED);

const FOLDERS = ['open', 'team', 'team/inner', 'board'];
const FILES = ['a.md', 'b.md', 'c.md'];
const PERMISSIONS = ['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'];
const ROLES = ['reader', 'writer', 'admin'] as const;

const store = fc.record({
  items: fc.uniqueArray(
    fc.record({ folder: fc.constantFrom(...FOLDERS), file: fc.constantFrom(...FILES), permission: fc.constantFrom(...PERMISSIONS) }),
    { minLength: 1, maxLength: 12, selector: (i) => `${i.folder}/${i.file}` },
  ),
  rules: fc.uniqueArray(fc.record({ folder: fc.constantFrom(...FOLDERS), rule: fc.constantFrom(...PERMISSIONS) }), { maxLength: 3, selector: (r) => r.folder }),
});

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

async function pagedTool(client: Client, prefix?: string): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const result: CallToolResult = await call(client, 'list', { limit: 2, ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) });
    expect(result.isError).to.not.equal(true);
    const data = result.structuredContent as { items: Array<{ path: string }>; nextCursor: string | null };
    seen.push(...data.items.map((i) => i.path));
    cursor = data.nextCursor;
  } while (cursor);
  return seen;
}

async function pagedResources(client: Client): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    seen.push(...page.resources.map((r) => r.name));
    cursor = page.nextCursor;
  } while (cursor);
  return seen;
}

describe('MCP never shows an item its key may not read (model)', function () {
  this.timeout(600_000);

  it(`${RUNS} drawn stores: every role's list, resources, search, read and history equal what REST lets it read`, async () => {
    await fc.assert(
      fc.asyncProperty(store, async ({ items, rules }) => {
        const server = await startTestServer();
        const clients: Client[] = [];
        try {
          const admin = server.adminKey;
          for (const { folder, rule } of rules) {
            const res = await api(urlOf(server, `/folders/${folder}`), { method: 'PUT', key: admin, body: { requiredReadPermission: rule } });
            expect(res.status).to.equal(200);
          }
          for (const { folder, file, permission } of items) {
            const res = await api(urlOf(server, `/items/${folder}/${file}`), { method: 'PUT', key: admin, body: { content: `shared word quince in ${folder}\n`, requiredReadPermission: permission } });
            expect(res.status, JSON.stringify(res.body)).to.equal(200);
          }
          const every = items.map((i) => `${i.folder}/${i.file}`);
          for (const role of ROLES) {
            const key = role === 'admin' ? admin : await server.key(role);
            const truth = ((await api(urlOf(server, '?content=false'), { key })).body?.data as { items: Array<{ path: string }> }).items.map((i) => i.path);
            const client = await connectMcp(server, key);
            clients.push(client);
            expect(await pagedTool(client), `${role}: list`).to.deep.equal(truth);
            expect(await pagedTool(client, 'team/'), `${role}: list team/`).to.deep.equal(truth.filter((p) => p.startsWith('team/')));
            expect(await pagedResources(client), `${role}: resources`).to.deep.equal(truth);
            const found = await call(client, 'search', { query: 'quince', limit: 100 });
            const hits = (found.structuredContent as { results: Array<{ path: string }> }).results.map((r) => r.path);
            expect([...hits].sort(), `${role}: search`).to.deep.equal([...truth].sort());
            for (const path of every) {
              const may = truth.includes(path);
              const read = await call(client, 'read', { path });
              expect(read.isError === true, `${role}: read ${path}`).to.equal(!may);
              const history = await call(client, 'history', { path });
              expect(history.isError === true, `${role}: history ${path}`).to.equal(!may);
              if (!may) {
                expect(read.content[0]).to.deep.equal({ type: 'text', text: 'Knowledge item not found' });
                expect(JSON.stringify(history.content)).to.not.include('quince');
              }
              let resourceText: string | undefined;
              try {
                const [content] = (await client.readResource({ uri: `knowledge:///${path}` })).contents;
                resourceText = content && 'text' in content ? content.text : undefined;
              } catch {
                resourceText = undefined;
              }
              expect(resourceText !== undefined, `${role}: resources/read ${path}`).to.equal(may);
            }
          }
        } finally {
          for (const c of clients) await c.close();
          await server.close();
        }
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  });
});
