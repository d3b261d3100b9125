import { expect } from 'chai';
import { commitCount, fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { expectCommits, expectRefusedNoCommit, history, ISO, MALFORMED_BODIES, MSG4, sendRaw, UNKNOWN_KEY, urlOf, versions } from './adminApi.js';
import { expectError, get, itemOf, itemsOf, list, put } from './helpers.js';

interface FolderRule {
  folder: string;
  requiredReadPermission: string;
  requiredWritePermission: string;
  updatedAt: string | null;
}

function getRule(server: TestServer, key: string, folder: string): Promise<ApiResponse> {
  return api(urlOf(server, `/folders/${folder}`), { key });
}

function putRule(server: TestServer, key: string, folder: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, `/folders/${folder}`), { method: 'PUT', key, body });
}

function listRules(server: TestServer, key: string): Promise<ApiResponse> {
  return api(urlOf(server, '/folders'), { key });
}

function ruleOf(res: ApiResponse): FolderRule {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  return res.body?.data?.folder as FolderRule;
}

async function rules(server: TestServer, key: string): Promise<FolderRule[]> {
  const res = await listRules(server, key);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const folders = res.body?.data?.folders as FolderRule[];
  expect(folders).to.be.an('array');
  return [...folders].sort((x, y) => (x.folder < y.folder ? -1 : 1));
}

/** Rules without their timestamps: [folder, read, write]. */
async function ruleTriples(server: TestServer, key: string): Promise<[string, string, string][]> {
  return (await rules(server, key)).map((r) => [r.folder, r.requiredReadPermission, r.requiredWritePermission]);
}

/** Items at each depth under a/, all with `inherit`, plus one with its own read permission and one outside. */
const ITEMS = ['a/x.md', 'a/b/y.md', 'a/b/c/z.md', 'a/b/c/d/w.md', 'a/b/open.md', 'top.md'] as const;

describe('HTTP folder rules: GET /folders, GET/PUT /folders/{folder}', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;
  let other: string;
  let keys: Record<'reader' | 'writer' | 'admin', string>;

  /** Paths under ITEMS the key sees in the list, and the ones it may get (they must agree). */
  async function visible(key: string): Promise<string[]> {
    const listed = itemsOf(await list(server, key))
      .map((i) => i.path)
      .filter((p) => (ITEMS as readonly string[]).includes(p));
    const gettable: string[] = [];
    for (const path of ITEMS) {
      const res = await get(server, key, path);
      if (res.status === 200) gettable.push(path);
      else expectError(res, 404, MSG4.notFound);
    }
    expect(listed, 'list and get agree').to.deep.equal(gettable.sort());
    return listed;
  }

  async function visibility(): Promise<Record<string, string[]>> {
    return { reader: await visible(keys.reader), writer: await visible(keys.writer), admin: await visible(keys.admin) };
  }

  const ALL = ['a/b/c/d/w.md', 'a/b/c/z.md', 'a/b/open.md', 'a/b/y.md', 'a/x.md', 'top.md'];

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await server.key('writer');
    reader = await server.key('reader');
    other = await server.org('other');
    keys = { reader, writer, admin };
    for (const path of ITEMS) {
      const body = path === 'a/b/open.md' ? { content: path, requiredReadPermission: 'knowledge:read' } : { content: path };
      expect((await put(server, admin, path, body)).status, path).to.equal(200);
    }
  });
  after(() => server?.close());

  describe('access', () => {
    it('admin: no rules at first; a folder without a rule reads as inherit/inherit', async () => {
      expect(await rules(server, admin)).to.deep.equal([]);
      expect(ruleOf(await getRule(server, admin, 'a'))).to.deep.equal({
        folder: 'a',
        requiredReadPermission: 'inherit',
        requiredWritePermission: 'inherit',
        updatedAt: null,
      });
    });

    for (const role of ['reader', 'writer'] as const) {
      it(`${role}: 403 Forbidden — requires knowledge:admin permission on GET /folders, GET and PUT /folders/a; no commit`, async () => {
        const key = keys[role];
        expectError(await listRules(server, key), 403, MSG4.forbiddenAdmin);
        expectError(await getRule(server, key, 'a'), 403, MSG4.forbiddenAdmin);
        await expectRefusedNoCommit(server, () => putRule(server, key, 'a', { requiredReadPermission: 'knowledge:admin' }), 403, MSG4.forbiddenAdmin);
        expect(ruleOf(await getRule(server, admin, 'a')).requiredReadPermission).to.equal('inherit');
      });
    }

    it('a missing or unknown key: 401, no commit', async () => {
      expectError(await api(urlOf(server, '/folders')), 401, MSG4.invalidKey);
      expectError(await getRule(server, UNKNOWN_KEY, 'a'), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => putRule(server, UNKNOWN_KEY, 'a', { requiredReadPermission: 'knowledge:admin' }), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/folders/a'), { method: 'PUT', body: {} }), 401, MSG4.invalidKey);
    });

    it('wrong method: 405, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/folders/a'), { method: 'DELETE', key: admin }), 405);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/folders/a'), { method: 'POST', key: admin, body: {} }), 405);
    });

    it('with no rules every role sees every inherit item', async () => {
      expect(await visibility()).to.deep.equal({ reader: ALL, writer: ALL, admin: ALL });
    });
  });

  describe('inheritance at three depths', () => {
    it('a rule on a: one commit, returned, and in effect for the very next list and get', async () => {
      const before = Date.now();
      const res = await expectCommits(server, 1, () => putRule(server, admin, 'a', { requiredReadPermission: 'knowledge:write' }));
      const rule = ruleOf(res);
      expect([rule.folder, rule.requiredReadPermission, rule.requiredWritePermission]).to.deep.equal(['a', 'knowledge:write', 'inherit']);
      expect(rule.updatedAt).to.be.a('string').and.match(ISO);
      expect(Date.parse(rule.updatedAt as string)).to.be.at.least(before - 1000);
      expect(await visibility()).to.deep.equal({
        reader: ['a/b/open.md', 'top.md'],
        writer: ALL,
        admin: ALL,
      });
    });

    it('a rule on a/b: the nearest rule wins for a/b and everything below it', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'knowledge:admin' }));
      expect(await visibility()).to.deep.equal({
        reader: ['a/b/open.md', 'top.md'],
        writer: ['a/b/open.md', 'a/x.md', 'top.md'],
        admin: ALL,
      });
    });

    it('a rule on a/b/c: nearer still, also for a/b/c/d (no rule of its own)', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b/c', { requiredReadPermission: 'knowledge:read' }));
      expect(await visibility()).to.deep.equal({
        reader: ['a/b/c/d/w.md', 'a/b/c/z.md', 'a/b/open.md', 'top.md'],
        writer: ['a/b/c/d/w.md', 'a/b/c/z.md', 'a/b/open.md', 'a/x.md', 'top.md'],
        admin: ALL,
      });
    });

    it('GET /folders and GET /folders/{folder} show the three rules', async () => {
      expect(await ruleTriples(server, admin)).to.deep.equal([
        ['a', 'knowledge:write', 'inherit'],
        ['a/b', 'knowledge:admin', 'inherit'],
        ['a/b/c', 'knowledge:read', 'inherit'],
      ]);
      const ab = ruleOf(await getRule(server, admin, 'a/b'));
      expect([ab.folder, ab.requiredReadPermission, ab.requiredWritePermission]).to.deep.equal(['a/b', 'knowledge:admin', 'inherit']);
      // Written as the rest of the API writes folders (prefix=, scopes): the same folder.
      expect(ruleOf(await getRule(server, admin, 'a/b/'))).to.deep.equal(ab);
      expect(ab.updatedAt).to.match(ISO);
      // A folder without a rule of its own reads inherit, whatever its ancestors say.
      expect(ruleOf(await getRule(server, admin, 'a/b/c/d'))).to.deep.equal({
        folder: 'a/b/c/d',
        requiredReadPermission: 'inherit',
        requiredWritePermission: 'inherit',
        updatedAt: null,
      });
    });

    it('a hidden item has hidden history too; rule changes add no item versions', async () => {
      expectError(await history(server, writer, 'a/b/y.md'), 404, MSG4.notFound);
      expectError(await history(server, reader, 'a/x.md'), 404, MSG4.notFound);
      expect((await versions(server, reader, 'a/b/c/z.md')).map((v) => v.action)).to.deep.equal(['create']);
      expect((await versions(server, admin, 'a/b/y.md')).map((v) => v.action)).to.deep.equal(['create']);
    });

    it('the same rule again: 200, no commit', async () => {
      const before = await commitCount(server.gitdir());
      const rule = ruleOf(await putRule(server, admin, 'a/b', { requiredReadPermission: 'knowledge:admin' }));
      expect(rule.requiredReadPermission).to.equal('knowledge:admin');
      expect(ruleOf(await putRule(server, admin, 'a/b', {})).requiredReadPermission).to.equal('knowledge:admin');
      expect(ruleOf(await putRule(server, admin, 'a/b/', { requiredReadPermission: 'knowledge:admin' }))).to.include({ folder: 'a/b', requiredReadPermission: 'knowledge:admin' });
      expect(await commitCount(server.gitdir())).to.equal(before);
    });

    it('setting a/b back to inherit removes its rule (one commit): a/b resolves to a again, at once', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'inherit' }));
      expect(ruleOf(await getRule(server, admin, 'a/b'))).to.deep.equal({
        folder: 'a/b',
        requiredReadPermission: 'inherit',
        requiredWritePermission: 'inherit',
        updatedAt: null,
      });
      expect((await ruleTriples(server, admin)).map((r) => r[0])).to.deep.equal(['a', 'a/b/c']);
      expect(await visibility()).to.deep.equal({
        reader: ['a/b/c/d/w.md', 'a/b/c/z.md', 'a/b/open.md', 'top.md'],
        writer: ALL,
        admin: ALL,
      });
    });

    it('removing the rule on a/b/c: its items fall through to a', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b/c', { requiredReadPermission: 'inherit', requiredWritePermission: 'inherit' }));
      expect(await visibility()).to.deep.equal({
        reader: ['a/b/open.md', 'top.md'],
        writer: ALL,
        admin: ALL,
      });
    });
  });

  describe('write rules, and fields set one at a time', () => {
    it('a write rule on a/b (read left inherit): reads of a/b resolve past it to a; writes need admin', async () => {
      const rule = ruleOf(await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredWritePermission: 'knowledge:admin' })));
      expect([rule.requiredReadPermission, rule.requiredWritePermission]).to.deep.equal(['inherit', 'knowledge:admin']);
      expect(await visible(writer)).to.deep.equal(ALL);
      await expectRefusedNoCommit(server, () => put(server, writer, 'a/b/y.md', { content: 'changed' }), 403, MSG4.forbiddenAdmin);
      await expectRefusedNoCommit(server, () => put(server, writer, 'a/b/c/z.md', { content: 'changed' }), 403, MSG4.forbiddenAdmin);
      expect(itemOf(await get(server, admin, 'a/b/y.md')).content).to.equal('a/b/y.md');
      expect((await put(server, writer, 'a/x.md', { content: 'a/x.md v2' })).status).to.equal(200);
      expect((await put(server, admin, 'a/b/y.md', { content: 'a/b/y.md v2' })).status).to.equal(200);
    });

    it('a field left out keeps its value; inherit clears only that field', async () => {
      let rule = ruleOf(await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'knowledge:admin' })));
      expect([rule.requiredReadPermission, rule.requiredWritePermission]).to.deep.equal(['knowledge:admin', 'knowledge:admin']);
      expect(await visible(writer)).to.deep.equal(['a/b/open.md', 'a/x.md', 'top.md']);
      rule = ruleOf(await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredWritePermission: 'inherit' })));
      expect([rule.requiredReadPermission, rule.requiredWritePermission]).to.deep.equal(['knowledge:admin', 'inherit']);
      expect(ruleOf(await getRule(server, admin, 'a/b')).requiredReadPermission).to.equal('knowledge:admin');
    });

    it('a rule with both fields inherit is removed', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'inherit', requiredWritePermission: 'inherit' }));
      expect((await ruleTriples(server, admin)).map((r) => r[0])).to.deep.equal(['a']);
      expect(await visible(writer)).to.deep.equal(ALL);
    });

    it('an item with its own permission ignores folder rules', async () => {
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'knowledge:admin' }));
      expect(itemOf(await get(server, reader, 'a/b/open.md')).content).to.equal('a/b/open.md');
      await expectCommits(server, 1, () => putRule(server, admin, 'a/b', { requiredReadPermission: 'inherit' }));
    });
  });

  describe("another organization's admin", () => {
    it("sees only its own rules, and its rules do not touch this organization's items", async () => {
      expect(await rules(server, other)).to.deep.equal([]);
      expect(ruleOf(await getRule(server, other, 'a'))).to.deep.equal({
        folder: 'a',
        requiredReadPermission: 'inherit',
        requiredWritePermission: 'inherit',
        updatedAt: null,
      });
      const ours = await commitCount(server.gitdir());
      await expectCommits(server, 1, () => putRule(server, other, 'top', { requiredReadPermission: 'knowledge:admin' }), 'other');
      await expectCommits(server, 1, () => putRule(server, other, 'a', { requiredReadPermission: 'knowledge:read' }), 'other');
      expect(await commitCount(server.gitdir())).to.equal(ours);
      expect(await ruleTriples(server, admin)).to.deep.equal([['a', 'knowledge:write', 'inherit']]);
      expect(await visible(reader)).to.deep.equal(['a/b/open.md', 'top.md']);
    });
  });

  describe('bad input: 400/415 and no commit', () => {
    const cases: { name: string; body: unknown; message?: RegExp }[] = [
      { name: 'unknown read permission', body: { requiredReadPermission: 'superuser' }, message: /requiredReadPermission/ },
      { name: 'read permission not a permission name (role name)', body: { requiredReadPermission: 'admin' }, message: /requiredReadPermission/ },
      { name: 'write permission below write', body: { requiredWritePermission: 'knowledge:read' }, message: /requiredWritePermission/ },
      { name: 'read permission as a number', body: { requiredReadPermission: 3 }, message: /requiredReadPermission/ },
      { name: 'write permission null', body: { requiredWritePermission: null }, message: /requiredWritePermission/ },
      { name: 'unknown field', body: { requiredReadPermission: 'knowledge:admin', recursive: true }, message: /recursive/ },
      { name: 'one good field and one bad', body: { requiredReadPermission: 'knowledge:admin', requiredWritePermission: 'nope' } },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        await expectRefusedNoCommit(server, () => putRule(server, admin, 'a/b', c.body), 400, c.message);
      });
    }
    for (const c of MALFORMED_BODIES) {
      it(c.name, async () => {
        await expectRefusedNoCommit(server, () => sendRaw(server, admin, 'PUT', '/folders/a/b', c.body, c.contentType), c.status);
      });
    }
    for (const folder of ['.trash', '.knowledge', 'A', 'a/.hidden', 'a b', 'a/b/c/d/e/f', 'a%2F%2Fb', 'a//', 'a/b//']) {
      it(`invalid folder ${JSON.stringify(folder)}: 400 on PUT and GET`, async () => {
        await expectRefusedNoCommit(server, () => putRule(server, admin, folder, { requiredReadPermission: 'knowledge:admin' }), 400, /^Invalid path: /);
        expectError(await getRule(server, admin, folder), 400, /^Invalid path: /);
      });
    }
    it('a query parameter: 400', async () => {
      expectError(await api(urlOf(server, '/folders?x=1'), { key: admin }), 400);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/folders/a/b?x=1'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:admin' } }), 400);
    });
    it('nothing changed: the rules are as they were', async () => {
      expect(await ruleTriples(server, admin)).to.deep.equal([['a', 'knowledge:write', 'inherit']]);
    });
  });

  // Child suites run after a suite's own tests: this one runs last.
  describe('at the end', () => {
    it('git fsck --strict is clean on both organizations', async () => {
      await fsckStrict(server.gitdir());
      await fsckStrict(server.gitdir('other'));
    });
  });
});

describe('HTTP folder rules: creating an item under a rule', function () {
  this.timeout(30_000);
  let server: TestServer;
  let writer: string;

  before(async () => {
    server = await startTestServer();
    writer = await server.key('writer');
    const res = await api(`${server.url}/api/v1/knowledge/folders/locked`, {
      method: 'PUT',
      key: server.adminKey,
      body: { requiredWritePermission: 'knowledge:admin' },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });

  after(() => server.close());

  it('refuses a writer a new item in a write=admin folder (403, no commit); an admin may', async () => {
    const before = await commitCount(server.gitdir());
    const refused = await api(`${server.url}/api/v1/knowledge/items/locked/deep/new.md`, { method: 'PUT', key: writer, body: { content: 'x' } });
    expect(refused.status).to.equal(403);
    expect(refused.body?.error).to.equal('Forbidden — requires knowledge:admin permission');
    expect(await commitCount(server.gitdir())).to.equal(before);
    const allowed = await api(`${server.url}/api/v1/knowledge/items/locked/deep/new.md`, { method: 'PUT', key: server.adminKey, body: { content: 'x' } });
    expect(allowed.status).to.equal(200);
    const elsewhere = await api(`${server.url}/api/v1/knowledge/items/open/new.md`, { method: 'PUT', key: writer, body: { content: 'x' } });
    expect(elsewhere.status).to.equal(200);
  });
});
