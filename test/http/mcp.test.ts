import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { commitCount, git } from '../support/git.js';
import { head, keyWithId, urlOf, versions } from './adminApi.js';
import { MSG, put } from './helpers.js';

type Data = Record<string, unknown>;

/** Calls a tool that must succeed; returns its structured data (and checks the text block says the same). */
async function ok(client: Client, name: string, args: Data): Promise<Data> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError, `${name} ${JSON.stringify(args)}: ${text}`).to.not.equal(true);
  expect(JSON.parse(text)).to.deep.equal(result.structuredContent);
  return result.structuredContent as Data;
}

/** Calls a tool that must be refused; returns the error text. */
async function refused(client: Client, name: string, args: Data): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, `${name} should be refused`).to.equal(true);
  expect(result.structuredContent).to.equal(undefined);
  const [first] = result.content;
  expect(first?.type).to.equal('text');
  return first?.type === 'text' ? first.text : '';
}

/** Refused with exactly this message (the REST answer's), and no commit made. */
async function refusedNoCommit(server: TestServer, client: Client, name: string, args: Data, message: string | RegExp): Promise<void> {
  const before = await commitCount(server.gitdir());
  const text = await refused(client, name, args);
  if (typeof message === 'string') expect(text).to.equal(message);
  else expect(text).to.match(message);
  expect(await commitCount(server.gitdir()), `commits after a refused ${name}`).to.equal(before);
}

const paths = (data: Data, field = 'items'): string[] => (data[field] as Array<{ path: string }>).map((r) => r.path);

/** A raw POST to /mcp, for what the SDK client would never send. */
function rawMcp(server: TestServer, body: string, headers: Record<string, string> = {}, method = 'POST'): Promise<Response> {
  return fetch(`${server.url}/mcp`, {
    method,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: method === 'POST' ? body : undefined,
  });
}

/** Every resource URI the client is shown, page after page. */
async function allResources(client: Client): Promise<{ uris: string[]; pages: number }> {
  const uris: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    uris.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  return { uris, pages };
}

const rpc = (method: string, params: Data, id = 1): string => JSON.stringify({ jsonrpc: '2.0', id, method, params });

describe('MCP: POST /mcp with the SDK client over real HTTP', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: Client;
  let writer: Client;
  let reader: Client;
  let other: Client;
  let writerKey: { secret: string; id: string; name: string };
  const clients: Client[] = [];

  before(async () => {
    server = await startTestServer();
    writerKey = await keyWithId(server, 'writer', 'agent-writer');
    admin = await connectMcp(server, server.adminKey);
    writer = await connectMcp(server, writerKey.secret);
    reader = await connectMcp(server, await server.key('reader'));
    other = await connectMcp(server, await server.org('other'));
    clients.push(admin, writer, reader, other);
    for (const [path, body] of [
      ['board/plans.md', { content: 'Secret tomato strategy.', requiredReadPermission: 'knowledge:admin' }],
      ['notes/garden.md', { content: 'The tomato plants need water every morning.' }],
      ['notes/kitchen.md', { content: 'A tomato sauce with basil.' }],
    ] as const) {
      expect((await put(server, server.adminKey, path, body)).status).to.equal(200);
    }
  });
  after(async () => {
    for (const c of clients) await c.close();
    await server?.close();
  });

  it('lists the tools the contract names, each with a schema, a title and the right hints', async () => {
    const { tools } = await reader.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal(
      ['changes', 'delete', 'diff', 'edit', 'history', 'list', 'move', 'read', 'restore', 'rollback', 'search', 'write'].sort(),
    );
    for (const t of tools) {
      expect(t.description, t.name).to.have.length.above(40);
      expect(t.inputSchema.type).to.equal('object');
      expect((t.inputSchema as { additionalProperties?: unknown }).additionalProperties, t.name).to.equal(false);
      expect(t.annotations?.title, t.name).to.be.a('string');
    }
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    for (const name of ['search', 'read', 'list', 'history', 'diff', 'changes']) expect(hints[name]?.readOnlyHint, name).to.equal(true);
    for (const name of ['write', 'edit', 'move', 'delete', 'restore', 'rollback']) expect(hints[name]?.readOnlyHint, name).to.equal(false);
    for (const name of ['delete', 'write', 'rollback']) expect(hints[name]?.destructiveHint, name).to.equal(true);
    const edit = tools.find((t) => t.name === 'edit');
    expect(edit?.inputSchema.required).to.deep.equal(['path', 'old_text', 'new_text']);
    expect(Object.keys(edit?.inputSchema.properties ?? {})).to.include('if_match');
  });

  it('write creates and updates an item as a commit authored by the key; read returns it with its etag', async () => {
    const created = await ok(writer, 'write', { path: 'agents/memory.md', content: '# Memory\nThe deploy runs on Fridays.\n', message: 'Remember deploy day' });
    expect(created.created).to.equal(true);
    expect(created.commitId).to.match(/^[0-9a-f]{40}$/);
    expect((created.item as Data).path).to.equal('agents/memory.md');
    expect(created.item).to.not.have.property('content');
    const author = await git(['log', '-1', '--format=%an <%ae>%n%s', 'main'], { gitdir: server.gitdir() });
    expect(author.trim()).to.equal(`agent-writer <${writerKey.id}>\nRemember deploy day`);

    const read = await ok(reader, 'read', { path: 'agents/memory.md' });
    expect((read.item as Data).content).to.equal('# Memory\nThe deploy runs on Fridays.\n');
    expect(read.etag).to.equal(created.etag);
    // The REST API sees the same item and the same tag.
    const rest = await api(`${server.url}/api/v1/knowledge/items/agents/memory.md`, { key: server.adminKey });
    expect(rest.headers.get('etag')).to.equal(`"${read.etag as string}"`);
    expect(rest.body?.data?.item).to.deep.equal(read.item);

    const same = await ok(writer, 'write', { path: 'agents/memory.md', content: '# Memory\nThe deploy runs on Fridays.\n', if_match: read.etag as string });
    expect(same.commitId, 'an identical write makes no commit').to.equal(null);
  });

  it('write with a stale if_match is refused with the REST message and writes nothing', async () => {
    const first = await ok(writer, 'write', { path: 'agents/race.md', content: 'one' });
    await ok(admin, 'write', { path: 'agents/race.md', content: 'two, by someone else' });
    await refusedNoCommit(server, writer, 'write', { path: 'agents/race.md', content: 'three', if_match: first.etag as string }, MSG.changed);
    // A blank if_match is refused, never taken for no condition at all.
    await refusedNoCommit(server, writer, 'write', { path: 'agents/race.md', content: 'three', if_match: '   ' }, 'if_match must be an ETag');
    // The quoted form the REST ETag header uses is accepted too.
    const now = await ok(reader, 'read', { path: 'agents/race.md' });
    await ok(writer, 'write', { path: 'agents/race.md', content: 'three', if_match: `"${now.etag as string}"` });
  });

  it('edit replaces exactly one occurrence, and otherwise says how many it found and changes nothing', async () => {
    await ok(writer, 'write', { path: 'agents/edit.md', content: 'alpha beta alpha gamma' });
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/edit.md', old_text: 'alpha', new_text: 'x' }, 'the text to replace occurs 2 times in agents/edit.md; include more of the surrounding text so that it occurs exactly once');
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/edit.md', old_text: 'delta', new_text: 'x' }, 'the text to replace was not found in agents/edit.md');
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/edit.md', old_text: '', new_text: 'x' }, 'old_text must NOT have fewer than 1 characters');
    const edited = await ok(writer, 'edit', { path: 'agents/edit.md', old_text: 'alpha gamma', new_text: 'omega', message: 'Fix the ending' });
    expect(edited.commitId).to.match(/^[0-9a-f]{40}$/);
    expect(((await ok(reader, 'read', { path: 'agents/edit.md' })).item as Data).content).to.equal('alpha beta omega');
    await ok(writer, 'write', { path: 'agents/many.md', content: 'x '.repeat(5000) });
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/many.md', old_text: 'x', new_text: 'y' }, /^the text to replace occurs more than 100 times in agents\/many\.md;/);
    // Overlapping matches count: "aa" is twice in "aaa".
    await ok(writer, 'write', { path: 'agents/overlap.md', content: 'aaa' });
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/overlap.md', old_text: 'aa', new_text: 'b' }, /occurs 2 times/);
    // An edit on a version the agent has not seen is refused.
    const seen = await ok(reader, 'read', { path: 'agents/edit.md' });
    await ok(admin, 'edit', { path: 'agents/edit.md', old_text: 'beta', new_text: 'BETA' });
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/edit.md', old_text: 'omega', new_text: 'z', if_match: seen.etag as string }, MSG.changed);
    await refusedNoCommit(server, reader, 'edit', { path: 'agents/edit.md', old_text: 'omega', new_text: 'z' }, MSG.forbiddenWrite);
    await refusedNoCommit(server, writer, 'edit', { path: 'agents/missing.md', old_text: 'a', new_text: 'b' }, MSG.notFound);
  });

  it('search, list, history, diff and changes answer as the REST routes do', async () => {
    const found = await ok(reader, 'search', { query: 'tomato' });
    expect(paths(found, 'results')).to.have.members(['notes/garden.md', 'notes/kitchen.md']);
    const hit = (found.results as Data[])[0] as Data;
    expect(hit.snippet).to.include('«tomato»');
    expect(await ok(reader, 'search', { query: 'tomato', prefix: 'notes/', limit: 1 })).to.have.property('nextCursor').that.is.a('string');

    const listed = await ok(reader, 'list', { prefix: 'notes/' });
    expect(paths(listed)).to.deep.equal(['notes/garden.md', 'notes/kitchen.md']);
    expect(listed.nextCursor).to.equal(null);
    const page = await ok(reader, 'list', { limit: 1 });
    expect(paths(page)).to.have.lengthOf(1);
    const next = await ok(reader, 'list', { limit: 1, cursor: page.nextCursor as string });
    expect((paths(next)[0] as string) > (paths(page)[0] as string)).to.equal(true);

    const hist = await ok(reader, 'history', { path: 'agents/edit.md' });
    const versionsSeen = hist.versions as Array<{ version: number; action: string; message: string }>;
    expect(versionsSeen.map((v) => v.version)).to.deep.equal([3, 2, 1]);
    expect(versionsSeen[1]?.message).to.equal('Fix the ending');
    expect(versionsSeen).to.deep.equal(await versions(server, server.adminKey, 'agents/edit.md'));
    const diff = await ok(reader, 'diff', { path: 'agents/edit.md', from: 1, to: 2 });
    expect(diff.diff).to.include('-alpha beta alpha gamma').and.include('+alpha beta omega');
    expect(((await ok(reader, 'read', { path: 'agents/edit.md', version: 1 })).item as Data).content).to.equal('alpha beta alpha gamma');

    const start = await ok(reader, 'changes', {});
    expect(start).to.deep.equal({ head: await head(server), changes: [] });
    await ok(writer, 'write', { path: 'agents/later.md', content: 'later' });
    const changed = await ok(reader, 'changes', { since: start.head as string });
    expect(changed.changes).to.have.lengthOf(1);
    expect((changed.changes as Data[])[0]).to.include({ path: 'agents/later.md', change: 'created' });
    expect(await refused(reader, 'changes', { since: 'abc' })).to.equal('since must be the full id of a commit of this organization');
  });

  it('move keeps the id and history, refuses a taken path or a stale if_match with the REST message, and commits nothing then', async () => {
    const created = await ok(writer, 'write', { path: 'agents/draft.md', content: 'a plan' });
    await ok(writer, 'write', { path: 'agents/taken.md', content: 'in the way' });
    await refusedNoCommit(server, writer, 'move', { from: 'agents/draft.md', to: 'agents/taken.md' }, 'Path conflict: "agents/taken.md" is taken');
    await refusedNoCommit(server, reader, 'move', { from: 'agents/draft.md', to: 'agents/final.md' }, MSG.forbiddenWrite);
    await refusedNoCommit(server, writer, 'move', { from: 'agents/draft.md', to: 'agents/final.md', if_match: 'stale' }, MSG.changed);
    await refusedNoCommit(server, writer, 'move', { from: 'board/plans.md', to: 'agents/plans.md' }, MSG.notFound);
    await refusedNoCommit(server, writer, 'move', { from: 'agents/draft.md', to: 'agents/draft.md' }, 'from and to are the same path: nothing to move');
    const moved = await ok(writer, 'move', { from: 'agents/draft.md', to: 'agents/final.md', if_match: created.etag as string, message: 'Promote the draft' });
    expect(moved.commitId).to.match(/^[0-9a-f]{40}$/);
    expect((moved.item as Data).id).to.equal((created.item as Data).id);
    await refusedNoCommit(server, reader, 'read', { path: 'agents/draft.md' }, MSG.notFound);
    const hist = (await ok(reader, 'history', { path: 'agents/final.md' })).versions as Array<{ action: string; message: string }>;
    expect(hist.map((v) => v.action)).to.deep.equal(['move', 'create']);
    expect(hist[0]?.message).to.equal('Promote the draft');
    expect(paths(await ok(reader, 'search', { query: 'plan' }), 'results')).to.include('agents/final.md').and.not.include('agents/draft.md');
  });

  it('rollback, delete and restore: the same permissions and commits as REST', async () => {
    await ok(writer, 'write', { path: 'agents/roll.md', content: 'v1' });
    await ok(writer, 'write', { path: 'agents/roll.md', content: 'v2 (a mistake)' });
    const rolled = await ok(writer, 'rollback', { path: 'agents/roll.md', version: 1 });
    expect(rolled.commitId).to.match(/^[0-9a-f]{40}$/);
    expect(((await ok(reader, 'read', { path: 'agents/roll.md' })).item as Data).content).to.equal('v1');
    await refusedNoCommit(server, reader, 'rollback', { path: 'agents/roll.md', version: 2 }, MSG.forbiddenWrite);
    await refusedNoCommit(server, writer, 'rollback', { path: 'agents/roll.md', version: 9 }, 'Version not found');

    await refusedNoCommit(server, writer, 'delete', { path: 'agents/roll.md' }, MSG.forbiddenAdmin);
    const deleted = await ok(admin, 'delete', { path: 'agents/roll.md' });
    expect(deleted.message).to.equal(MSG.deleted);
    await refusedNoCommit(server, reader, 'read', { path: 'agents/roll.md' }, MSG.notFound);
    expect(paths(await ok(reader, 'search', { query: 'v1' }), 'results')).to.not.include('agents/roll.md');
    await refusedNoCommit(server, writer, 'write', { path: 'agents/roll.md', content: 'x' }, MSG.inTrash);
    await refusedNoCommit(server, writer, 'restore', { path: 'agents/roll.md' }, MSG.forbiddenAdmin);
    await ok(admin, 'restore', { path: 'agents/roll.md' });
    expect(((await ok(reader, 'read', { path: 'agents/roll.md' })).item as Data).content).to.equal('v1');
    const actions = (await versions(server, server.adminKey, 'agents/roll.md')).map((v) => v.action);
    expect(actions.slice(0, 2)).to.deep.equal(['restore', 'delete']);
  });

  it('no tool or resource shows an item the key may not read; another organization sees none of these', async () => {
    await refusedNoCommit(server, reader, 'read', { path: 'board/plans.md' }, MSG.notFound);
    await refusedNoCommit(server, writer, 'history', { path: 'board/plans.md' }, MSG.notFound);
    expect(paths(await ok(reader, 'search', { query: 'strategy' }), 'results')).to.deep.equal([]);
    expect(paths(await ok(admin, 'search', { query: 'strategy' }), 'results')).to.deep.equal(['board/plans.md']);
    expect(paths(await ok(reader, 'list', { limit: 1000 }))).to.not.include('board/plans.md');
    await refusedNoCommit(server, writer, 'write', { path: 'board/plans.md', content: 'overwritten' }, 'Path conflict: "board/plans.md" is taken');

    await refusedNoCommit(server, other, 'read', { path: 'notes/garden.md' }, MSG.notFound);
    expect(paths(await ok(other, 'search', { query: 'tomato' }), 'results')).to.deep.equal([]);
    expect(paths(await ok(other, 'list', {}))).to.deep.equal([]);
    // Its own writes land in its own repository, not this one.
    const before = await commitCount(server.gitdir());
    await ok(other, 'write', { path: 'notes/garden.md', content: 'theirs' });
    expect(await commitCount(server.gitdir())).to.equal(before);
    expect(((await ok(reader, 'read', { path: 'notes/garden.md' })).item as Data).content).to.equal('The tomato plants need water every morning.');
  });

  it('every item is a resource knowledge:///{path}, listed a page at a time as the key may read them', async () => {
    for (let i = 0; i < 105; i++) {
      expect((await put(server, server.adminKey, `many/item-${String(i).padStart(3, '0')}.txt`, { content: `item ${i}` })).status).to.equal(200);
    }
    const { uris: seen, pages } = await allResources(reader);
    expect(pages).to.be.at.least(2);
    const rest = await api(urlOf(server, '?content=false'), { key: (await server.key('reader')) });
    const restPaths = (rest.body?.data?.items as Array<{ path: string }>).map((i) => i.path);
    expect(seen).to.deep.equal(restPaths.map((p) => `knowledge:///${p}`));
    expect(seen).to.not.include('knowledge:///board/plans.md');

    const read = await reader.readResource({ uri: 'knowledge:///notes/kitchen.md' });
    expect(read.contents).to.deep.equal([{ uri: 'knowledge:///notes/kitchen.md', mimeType: 'text/markdown', text: 'A tomato sauce with basil.' }]);
    expect((await reader.readResource({ uri: 'knowledge:///many/item-104.txt' })).contents).to.deep.equal([
      { uri: 'knowledge:///many/item-104.txt', mimeType: 'text/plain', text: 'item 104' },
    ]);
    for (const [client, uri] of [[reader, 'knowledge:///board/plans.md'], [other, 'knowledge:///notes/kitchen.md'], [admin, 'knowledge:///nope.md']] as const) {
      let message = '';
      try {
        await client.readResource({ uri });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, uri).to.equal('MCP error -32002: Knowledge item not found');
    }
    const templates = await reader.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).to.deep.equal(['knowledge:///{+path}']);
  });

  describe('bad input: a JSON-RPC or tool error, never a 500, nothing written', () => {
    it('wrong argument types and unknown arguments are tool errors naming the argument', async () => {
      await refusedNoCommit(server, writer, 'write', { path: 'agents/x.md', content: 5 }, 'content must be a string');
      await refusedNoCommit(server, writer, 'write', { path: 'agents/x.md' }, 'content is required');
      await refusedNoCommit(server, writer, 'write', { path: 'agents/x.md', content: 'x', force: true }, 'Unknown argument "force"');
      await refusedNoCommit(server, reader, 'read', { path: 'agents/memory.md', version: '1' }, 'version must be an integer');
      await refusedNoCommit(server, reader, 'search', { query: '"unclosed' }, /quote/);
      await refusedNoCommit(server, writer, 'write', { path: '../escape.md', content: 'x' }, /path/i);
      await refusedNoCommit(server, reader, 'list', { limit: 0 }, 'limit must be >= 1');
    });

    it('an unknown tool is a JSON-RPC error', async () => {
      let message = '';
      try {
        await reader.callTool({ name: 'drop_everything', arguments: {} });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).to.equal('MCP error -32602: Unknown tool: drop_everything');
    });

    it('malformed JSON, a non-JSON-RPC body, or a body over the limit: a JSON-RPC error with a 4xx', async () => {
      const key = { Authorization: `Bearer ${server.adminKey}` };
      const before = await commitCount(server.gitdir());
      for (const body of ['{"jsonrpc": ', '[]', '{"hello": "world"}', '"x"', 'null']) {
        const res = await rawMcp(server, body, key);
        expect(res.status, body).to.be.within(400, 499);
        const answer = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
        expect(answer.jsonrpc, body).to.equal('2.0');
        expect(answer.error.code, body).to.be.below(-32000 + 1);
      }
      for (const empty of ['[]', ' [ \n ] ']) {
        const res = await rawMcp(server, empty, key);
        expect(res.status, JSON.stringify(empty)).to.equal(400);
        expect(((await res.json()) as { error: { code: number } }).error.code).to.equal(-32600);
      }
      const huge = rpc('tools/call', { name: 'write', arguments: { path: 'agents/huge.md', content: 'x'.repeat(1_200_000) } });
      const res = await rawMcp(server, huge, key);
      expect(res.status).to.equal(413);
      expect(((await res.json()) as { error: { message: string } }).error.message).to.equal('Content too large');
      // Just over the content limit but within the body limit: the write's own refusal.
      const over = rpc('tools/call', { name: 'write', arguments: { path: 'agents/huge.md', content: 'x'.repeat(1_048_577) } });
      const tooBig = await rawMcp(server, over, key);
      expect(tooBig.status).to.equal(200);
      const answer = (await tooBig.json()) as { result: CallToolResult };
      expect(answer.result.isError).to.equal(true);
      expect(answer.result.content[0]).to.deep.equal({ type: 'text', text: 'Content too large' });
      expect(await commitCount(server.gitdir())).to.equal(before);
    });

    it('no key or a bad key: 401 with WWW-Authenticate: Bearer', async () => {
      for (const headers of [{}, { Authorization: 'Bearer ks_nope' }] as Record<string, string>[]) {
        const res = await rawMcp(server, rpc('tools/list', {}), headers);
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.match(/^Bearer\b/);
        expect(((await res.json()) as { error: { message: string } }).error.message).to.equal(MSG.invalidKey);
      }
      let failed = false;
      try {
        await connectMcp(server, 'ks_not-a-key');
      } catch {
        failed = true;
      }
      expect(failed, 'the SDK client cannot connect with a bad key').to.equal(true);
    });

    it('a foreign Origin is 403; the server\'s own origin and a configured one are served', async () => {
      const key = { Authorization: `Bearer ${server.adminKey}` };
      const foreign = await rawMcp(server, rpc('tools/list', {}), { ...key, Origin: 'https://evil.example' });
      expect(foreign.status).to.equal(403);
      expect(((await foreign.json()) as { error: { message: string } }).error.message).to.equal('Origin not allowed: https://evil.example');
      expect((await rawMcp(server, rpc('tools/list', {}), { ...key, Origin: 'null' })).status).to.equal(403);
      const own = await rawMcp(server, rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } }), { ...key, Origin: server.url });
      expect(own.status).to.equal(200);

      const configured = await startTestServer({ config: { allowedOrigins: ['https://agents.example.com'] } });
      try {
        const init = rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } });
        const allowed = await rawMcp(configured, init, { Authorization: `Bearer ${configured.adminKey}`, Origin: 'https://agents.example.com' });
        expect(allowed.status).to.equal(200);
        const refusedOrigin = await rawMcp(configured, init, { Authorization: `Bearer ${configured.adminKey}`, Origin: 'https://agents.example.org' });
        expect(refusedOrigin.status).to.equal(403);
      } finally {
        await configured.close();
      }
    });

    it('the key\'s rate limit counts MCP requests like any API request, and each answer has a request id', async () => {
      const limited = await startTestServer({ config: { rateLimitPerKey: 3, rateLimitPerKeyBurst: 3 } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) {
          const res = await rawMcp(limited, rpc('tools/list', {}, i), { Authorization: `Bearer ${limited.adminKey}` });
          expect(res.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
          statuses.push(res.status);
          if (res.status === 429) {
            expect(res.headers.get('retry-after')).to.match(/^\d+$/);
            expect(((await res.json()) as { error: { message: string } }).error.message).to.equal('Too many requests');
          }
        }
        expect(statuses).to.deep.equal([200, 200, 200, 429]);
      } finally {
        await limited.close();
      }
    });

    it('GET and DELETE on /mcp are 405 with Allow: POST', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await rawMcp(server, '', { Authorization: `Bearer ${server.adminKey}` }, method);
        expect(res.status, method).to.equal(405);
        expect(res.headers.get('allow')).to.equal('POST');
      }
    });
  });
});
