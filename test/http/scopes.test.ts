import { expect } from 'chai';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createKey } from '../../src/domain/keys.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { connectMcp } from '../support/mcp.js';
import { commitCount } from '../support/git.js';
import { basicAuth, cloneUrl, runGit } from '../git/support.js';
import { tmpDir } from '../support/tmp.js';
import { head, urlOf } from './adminApi.js';
import { del, expectError, get, itemOf, itemsOf, keyStoreOf, list, MSG, put } from './helpers.js';

/**
 * Scoped keys (contract §9, last paragraph): a key limited to folders sees and touches only items
 * under them; everything else is absent (404 as for a missing item, left out of lists, search,
 * history, changes, trash). A write outside is 403 on the path alone; a clone and key management
 * are refused. The model test (test/reliability/scopeModel.test.ts) checks every route at random.
 */
const OUTSIDE = (path: string, scopes: string): string => `Forbidden — ${path} is outside this key's scopes (${scopes})`;

describe('HTTP scoped keys', function () {
  this.timeout(60_000);
  let server: TestServer;
  let admin: string;

  const scopedKey = async (role: 'reader' | 'writer' | 'admin', scopes: string[], name = `${role}-scoped`): Promise<string> =>
    (await createKey({ keys: keyStoreOf(server), orgId: 'default', role, name, scopes })).secret;
  const paths = (res: ApiResponse): string[] => itemsOf(res).map((i) => i.path);

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    for (const path of ['docs/a.md', 'docs/sub/b.md', 'docs-x/c.md', 'notes/d.md', 'secret/e.md', 'docsy.md']) {
      expect((await put(server, admin, path, { content: `apple ${path}\n` })).status).to.equal(200);
    }
  });
  after(() => server?.close());

  describe('creating scoped keys', () => {
    it('POST /keys {scopes} normalises, sorts, and shows the scopes in the listing', async () => {
      const res = await api(urlOf(server, '/keys'), { method: 'POST', key: admin, body: { name: 'agent', role: 'writer', scopes: ['notes', 'docs/'] } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const key = res.body?.data?.key as { id: string; scopes: string[] | null };
      expect(key.scopes).to.deep.equal(['docs/', 'notes/']);
      const listed = (await api(urlOf(server, '/keys'), { key: admin })).body?.data?.keys as Array<{ id: string; scopes: string[] | null }>;
      expect(listed.find((k) => k.id === key.id)?.scopes).to.deep.equal(['docs/', 'notes/']);
      // A key without scopes lists as null: the whole organization.
      expect(listed.find((k) => k.id !== key.id)?.scopes).to.equal(null);
      const secret = res.body?.data?.secret as string;
      expect(paths(await list(server, secret))).to.deep.equal(['docs/a.md', 'docs/sub/b.md', 'notes/d.md']);
    });

    it('refuses bad scopes with 400 and creates no key', async () => {
      const before = (await api(urlOf(server, '/keys'), { key: admin })).body?.data?.keys as unknown[];
      const cases: Array<[unknown, RegExp]> = [
        [[], /scopes must hold 1 to 50 folders/],
        [Array.from({ length: 51 }, (_, i) => `f${i}/`), /scopes must hold 1 to 50 folders/],
        [['docs/', 'docs'], /scope "docs\/" is given twice/],
        [['docs/', 'docs/sub/'], /scope "docs\/sub\/" is inside scope "docs\/"/],
        [['/docs/'], /Invalid scope "\/docs\/"/],
        [['Docs/'], /Invalid scope "Docs\/": only lowercase/],
        [['a/../b/'], /Invalid scope/],
        [['.trash/'], /Invalid scope/],
        [[''], /Invalid scope/],
        [[5], /scopes/],
        ['docs/', /scopes/],
        [null, /scopes/],
      ];
      for (const [scopes, message] of cases) {
        const res = await api(urlOf(server, '/keys'), { method: 'POST', key: admin, body: { name: 'bad', role: 'reader', scopes } });
        expect(res.status, `${JSON.stringify(scopes)}: ${JSON.stringify(res.body)}`).to.equal(400);
        expect(res.body?.error, JSON.stringify(scopes)).to.match(message);
      }
      const after = (await api(urlOf(server, '/keys'), { key: admin })).body?.data?.keys as unknown[];
      expect(after.length).to.equal(before.length);
    });

    it('a scoped admin may not manage keys (it could make itself a key without scopes)', async () => {
      const scopedAdmin = await scopedKey('admin', ['docs/']);
      const refusal = "Forbidden — a scoped key may not manage keys; use a key without scopes";
      expectError(await api(urlOf(server, '/keys'), { key: scopedAdmin }), 403, refusal);
      expectError(await api(urlOf(server, '/keys'), { method: 'POST', key: scopedAdmin, body: { name: 'x', role: 'admin' } }), 403, refusal);
      expectError(await api(urlOf(server, '/keys/key_0000'), { method: 'DELETE', key: scopedAdmin }), 403, refusal);
    });
  });

  describe('reading with a scoped key', () => {
    let reader: string;
    before(async () => {
      reader = await scopedKey('reader', ['docs/']);
    });

    it('lists only items under its folders, with paging and prefixes that stay inside', async () => {
      expect(paths(await list(server, reader))).to.deep.equal(['docs/a.md', 'docs/sub/b.md']);
      // "docs-x/" and "docsy.md" share the letters but not the folder.
      expect(paths(await list(server, reader, '?prefix=docs-x/'))).to.deep.equal([]);
      expect(paths(await list(server, reader, '?prefix=docs/sub/'))).to.deep.equal(['docs/sub/b.md']);
      const first = await list(server, reader, '?limit=1');
      expect(paths(first)).to.deep.equal(['docs/a.md']);
      const cursor = first.body?.data?.nextCursor as string;
      const second = await list(server, reader, `?limit=1&cursor=${cursor}`);
      expect(paths(second)).to.deep.equal(['docs/sub/b.md']);
      expect(second.body?.data?.nextCursor).to.equal(null);
    });

    it('gets, history and diff of an item outside answer exactly as for a missing item', async () => {
      expect(itemOf(await get(server, reader, 'docs/a.md')).path).to.equal('docs/a.md');
      expect(itemOf(await get(server, reader, `docs/a.md?ref=${await head(server)}`)).path).to.equal('docs/a.md');
      for (const path of ['notes/d.md', 'docs-x/c.md', 'docsy.md', 'nowhere/z.md']) {
        expectError(await get(server, reader, path), 404, MSG.notFound);
        expectError(await get(server, reader, `${path}?version=1`), 404, MSG.notFound);
        expectError(await api(urlOf(server, `/history/${path}`), { key: reader }), 404, MSG.notFound);
        expectError(await api(urlOf(server, `/diff/${path}?from=1&to=1`), { key: reader }), 404, MSG.notFound);
        expectError(await get(server, reader, `${path}?ref=${await head(server)}`), 404, MSG.notFound);
      }
    });

    it('searches only inside its folders, with a prefix narrowing them', async () => {
      const found = async (query: string): Promise<string[]> => {
        const res = await api(urlOf(server, `/search?q=apple${query}`), { key: reader });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        return (res.body?.data?.results as Array<{ path: string }>).map((r) => r.path).sort();
      };
      expect(await found('')).to.deep.equal(['docs/a.md', 'docs/sub/b.md']);
      expect(await found('&prefix=docs/sub/')).to.deep.equal(['docs/sub/b.md']);
      expect(await found('&prefix=notes/')).to.deep.equal([]);
      // Paging counts only what the key may see: one per page, two pages.
      const page = await api(urlOf(server, '/search?q=apple&limit=1'), { key: reader });
      const next = page.body?.data?.nextCursor as string;
      const last = await api(urlOf(server, `/search?q=apple&limit=1&cursor=${next}`), { key: reader });
      expect((last.body?.data?.results as unknown[]).length).to.equal(1);
      expect(last.body?.data?.nextCursor).to.equal(null);
    });

    it('the change feed shows only changes inside', async () => {
      const since = await head(server);
      await put(server, admin, 'docs/new.md', { content: 'new\n' });
      await put(server, admin, 'notes/new.md', { content: 'new\n' });
      const res = await api(urlOf(server, `/changes?since=${since}`), { key: reader });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect((res.body?.data?.changes as Array<{ path: string }>).map((c) => c.path)).to.deep.equal(['docs/new.md']);
    });
  });

  describe('writing with a scoped key', () => {
    let writer: string;
    before(async () => {
      writer = await scopedKey('writer', ['docs/', 'notes/']);
    });

    it('writes inside; a PUT outside is 403 whether or not the item exists, and commits nothing', async () => {
      expect((await put(server, writer, 'docs/w.md', { content: 'mine\n' })).status).to.equal(200);
      const commits = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'secret/e.md', { content: 'overwrite\n' }), 403, OUTSIDE('secret/e.md', 'docs/, notes/'));
      expectError(await put(server, writer, 'secret/new.md', { content: 'new\n' }), 403, OUTSIDE('secret/new.md', 'docs/, notes/'));
      expect(await commitCount(server.gitdir())).to.equal(commits);
      expect(itemOf(await get(server, admin, 'secret/e.md')).content).to.equal('apple secret/e.md\n');
    });

    it('moves inside; from outside is 404, to outside is 403', async () => {
      const move = (from: string, to: string): Promise<ApiResponse> => api(urlOf(server, '/move'), { method: 'POST', key: writer, body: { from, to } });
      expectError(await move('secret/e.md', 'docs/stolen.md'), 404, MSG.notFound);
      expectError(await move('docs/w.md', 'secret/w.md'), 403, OUTSIDE('secret/w.md', 'docs/, notes/'));
      expect((await move('docs/w.md', 'notes/w.md')).status).to.equal(200);
    });

    it('POST /commits: one operation outside refuses the whole commit, naming it', async () => {
      const commits = await commitCount(server.gitdir());
      const res = await api(urlOf(server, '/commits'), {
        method: 'POST',
        key: writer,
        body: { operations: [{ op: 'put', path: 'docs/ok.md', content: 'ok\n' }, { op: 'put', path: 'secret/x.md', content: 'x\n' }] },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(403);
      expect(res.body?.error).to.equal(OUTSIDE('secret/x.md', 'docs/, notes/'));
      expect(res.body?.data?.failedOperation).to.equal(1);
      const moveOut = await api(urlOf(server, '/commits'), {
        method: 'POST',
        key: writer,
        body: { operations: [{ op: 'move', from: 'secret/e.md', to: 'docs/e.md' }] },
      });
      expect([moveOut.status, moveOut.body?.error, moveOut.body?.data?.failedOperation]).to.deep.equal([404, MSG.notFound, 0]);
      expect(await commitCount(server.gitdir())).to.equal(commits);
      expectError(await get(server, admin, 'docs/ok.md'), 404, MSG.notFound);
    });

    it('MCP tools answer as the routes: a write outside is a tool error with the REST message, a write inside works', async () => {
      const client = await connectMcp(server, writer);
      try {
        const tool = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => (await client.callTool({ name, arguments: args })) as CallToolResult;
        const outside = await tool('write', { path: 'secret/mcp.md', content: 'x' });
        expect(outside.isError).to.equal(true);
        expect(outside.content[0]).to.deep.equal({ type: 'text', text: OUTSIDE('secret/mcp.md', 'docs/, notes/') });
        expect((await tool('read', { path: 'secret/e.md' })).content[0]).to.deep.equal({ type: 'text', text: MSG.notFound });
        expect((await tool('edit', { path: 'secret/e.md', old_text: 'apple', new_text: 'pear' })).isError).to.equal(true);
        expect((await tool('write', { path: 'notes/mcp.md', content: 'inside' })).isError).to.not.equal(true);
      } finally {
        await client.close();
      }
      expect(itemOf(await get(server, admin, 'secret/e.md')).content).to.equal('apple secret/e.md\n');
    });

    it('rollback of an item outside is 404', async () => {
      expectError(await api(urlOf(server, '/rollback'), { method: 'POST', key: writer, body: { path: 'secret/e.md', version: 1 } }), 404, MSG.notFound);
    });

    it('scopes narrow a role, never widen it: a scoped reader still cannot write inside', async () => {
      const reader = await scopedKey('reader', ['docs/']);
      expectError(await put(server, reader, 'docs/r.md', { content: 'r\n' }), 403, MSG.forbiddenWrite);
    });
  });

  describe('a scoped admin', () => {
    let scopedAdmin: string;
    before(async () => {
      scopedAdmin = await scopedKey('admin', ['docs/']);
      await put(server, admin, 'docs/trashme.md', { content: 't\n' });
      await put(server, admin, 'secret/trashme.md', { content: 't\n' });
      expect((await del(server, admin, 'docs/trashme.md')).status).to.equal(200);
      expect((await del(server, admin, 'secret/trashme.md')).status).to.equal(200);
    });

    it('deletes inside only; delete outside is 404', async () => {
      expectError(await del(server, scopedAdmin, 'secret/e.md'), 404, MSG.notFound);
      expect(itemOf(await get(server, admin, 'secret/e.md')).path).to.equal('secret/e.md');
    });

    it('sees, restores and purges trash inside only', async () => {
      const trash = (await api(urlOf(server, '/trash'), { key: scopedAdmin })).body?.data?.items as Array<{ path: string }>;
      expect(trash.map((t) => t.path)).to.deep.equal(['docs/trashme.md']);
      expectError(await api(urlOf(server, '/trash/restore'), { method: 'POST', key: scopedAdmin, body: { path: 'secret/trashme.md' } }), 404, MSG.notFound);
      expectError(await api(urlOf(server, '/trash/items/secret/trashme.md'), { method: 'DELETE', key: scopedAdmin }), 404, MSG.notFound);
      const full = (await api(urlOf(server, '/trash'), { key: admin })).body?.data?.items as Array<{ path: string }>;
      expect(full.map((t) => t.path)).to.include('secret/trashme.md');
      expect((await api(urlOf(server, '/trash/restore'), { method: 'POST', key: scopedAdmin, body: { path: 'docs/trashme.md' } })).status).to.equal(200);
    });

    it('manages folder rules inside its scopes only (a rule above a scope would reach outside)', async () => {
      const rule = (folder: string, key: string, method = 'PUT'): Promise<ApiResponse> =>
        api(urlOf(server, `/folders/${folder}`), { method, key, ...(method === 'PUT' ? { body: { requiredReadPermission: 'knowledge:admin' } } : {}) });
      expect((await rule('docs/sub', scopedAdmin)).status).to.equal(200);
      expect((await rule('docs', scopedAdmin, 'GET')).status).to.equal(200);
      expectError(await rule('secret', scopedAdmin), 403, OUTSIDE('secret/', 'docs/'));
      expectError(await rule('secret', scopedAdmin, 'GET'), 403, OUTSIDE('secret/', 'docs/'));
      expect((await rule('secret', admin)).status).to.equal(200);
      const listed = (await api(urlOf(server, '/folders'), { key: scopedAdmin })).body?.data as { folders: Array<{ folder: string }> };
      expect(listed.folders.map((f) => f.folder)).to.deep.equal(['docs/sub']);
    });

    it('may not revert: 403, and no commit is made', async () => {
      const refusal = 'Forbidden — a scoped key may not revert changes (a change may span folders); use a key without scopes';
      const before = await commitCount(server.gitdir());
      const since = new Date(Date.now() - 60_000).toISOString();
      const keys = (await api(urlOf(server, '/keys'), { key: admin })).body?.data?.keys as Array<{ id: string }>;
      expectError(await api(urlOf(server, '/revert'), { method: 'POST', key: scopedAdmin, body: { keyId: keys[0]?.id, since } }), 403, refusal);
      expectError(await api(urlOf(server, '/revert'), { method: 'POST', key: scopedAdmin, body: { commitId: await head(server) } }), 403, refusal);
      expect(await commitCount(server.gitdir())).to.equal(before);
    });

    it('may not clone or fetch: 403 with a clear message', async () => {
      const work = await tmpDir('ks-scoped-clone');
      try {
        const run = await runGit(['clone', '--quiet', cloneUrl(server.url, scopedAdmin), `${work.dir}/c`]);
        expect(run.code).to.not.equal(0);
        // git shows the server's text/plain answer to its user ("remote: ...").
        const refusal = 'Forbidden — a scoped key may not clone or fetch the repository (a clone holds every folder); use a key without scopes';
        expect(run.stderr).to.include(refusal);
        const refs = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, { headers: { Authorization: basicAuth(scopedAdmin) } });
        expect(refs.status).to.equal(403);
        expect((await refs.text()).trim()).to.equal(refusal);
      } finally {
        await work.cleanup();
      }
    });
  });
});
