import { expect } from 'chai';
import { fsckStrict, git } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import {
  expectCommits,
  expectRefusedNoCommit,
  head,
  ISO,
  keyWithId,
  MALFORMED_BODIES,
  MSG4,
  sendRaw,
  UNKNOWN_KEY,
  urlOf,
  versions,
} from './adminApi.js';
import { del, expectError, get, itemOf, itemsOf, list, put, UUID, type Item } from './helpers.js';

interface TrashItem extends Item {
  deletedAt: string | null;
  deletedBy: string | null;
}

function trash(server: TestServer, key: string): Promise<ApiResponse> {
  return api(urlOf(server, '/trash'), { key });
}

async function trashItems(server: TestServer, key: string): Promise<TrashItem[]> {
  return itemsOf(await trash(server, key)) as TrashItem[];
}

function restore(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/trash/restore'), { method: 'POST', key, body });
}

function purge(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return api(urlOf(server, `/trash/items/${path}`), { method: 'DELETE', key });
}

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r;
}

describe('HTTP trash: GET /trash, POST /trash/restore, DELETE /trash/items/{path}', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: { secret: string; id: string; name: string };
  let writer: string;
  let reader: string;
  let other: string;
  const created: Record<string, Item> = {};

  before(async () => {
    server = await startTestServer();
    admin = await keyWithId(server, 'admin', 'Trash Admin');
    writer = await server.key('writer');
    reader = await server.key('reader');
    other = await server.org('other');
    for (const [path, body] of [
      ['tr/a.md', { content: 'alpha\n' }],
      ['tr/secret.md', { content: 'secret\n', requiredReadPermission: 'knowledge:admin' }],
      ['tr/live.md', { content: 'live\n' }],
      ['tr/p.md', { content: 'old content\n' }],
    ] as const) {
      created[path] = itemOf(await ok(put(server, admin.secret, path, body)));
    }
    await ok(put(server, other, 'tr/theirs.md', { content: 'theirs' }));
  });
  after(() => server?.close());

  describe('GET /trash', () => {
    it('admin: empty before anything is deleted', async () => {
      expect(await trashItems(server, admin.secret)).to.deep.equal([]);
    });

    it('after deletes: each trashed item with deletedAt, deletedBy (key id), same id, no content', async () => {
      const t0 = Date.now();
      await ok(del(server, admin.secret, 'tr/a.md'));
      await ok(del(server, admin.secret, 'tr/secret.md'));
      const t1 = Date.now();
      const items = await trashItems(server, admin.secret);
      expect(items.map((i) => i.path).sort()).to.deep.equal(['tr/a.md', 'tr/secret.md']);
      for (const item of items) {
        expect(item).to.not.have.property('content');
        expect(item.id).to.match(UUID).and.equal(created[item.path]?.id);
        expect(item.organizationId).to.equal('default');
        expect(item.createdAt).to.equal(created[item.path]?.createdAt);
        expect(item.deletedBy).to.equal(admin.id);
        expect(item.deletedAt).to.be.a('string').and.match(ISO);
        const at = Date.parse(item.deletedAt as string);
        expect(at).to.be.at.least(t0 - 1000);
        expect(at).to.be.at.most(t1 + 1000);
      }
      expect(items.find((i) => i.path === 'tr/secret.md')?.requiredReadPermission).to.equal('knowledge:admin');
    });

    it('reader and writer: 403 Forbidden — requires knowledge:admin permission', async () => {
      expectError(await trash(server, reader), 403, MSG4.forbiddenAdmin);
      expectError(await trash(server, writer), 403, MSG4.forbiddenAdmin);
    });

    it("another organization's admin sees only its own trash", async () => {
      expect(await trashItems(server, other)).to.deep.equal([]);
      await ok(del(server, other, 'tr/theirs.md'));
      expect((await trashItems(server, other)).map((i) => i.path)).to.deep.equal(['tr/theirs.md']);
      expect((await trashItems(server, admin.secret)).map((i) => i.path).sort()).to.deep.equal(['tr/a.md', 'tr/secret.md']);
    });

    it('wrong method on the trash routes: 405, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash'), { method: 'POST', key: admin.secret, body: {} }), 405);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash/restore'), { key: admin.secret }), 405);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash/items/tr/a.md'), { key: admin.secret }), 405);
    });

    it('a query parameter: 400; a missing or unknown key: 401', async () => {
      expectError(await api(urlOf(server, '/trash?all=1'), { key: admin.secret }), 400);
      expectError(await api(urlOf(server, '/trash')), 401, MSG4.invalidKey);
      expectError(await trash(server, UNKNOWN_KEY), 401, MSG4.invalidKey);
    });
  });

  describe('POST /trash/restore {path}', () => {
    it('reader and writer: 403, no commit, still in the trash', async () => {
      await expectRefusedNoCommit(server, () => restore(server, reader, { path: 'tr/a.md' }), 403, MSG4.forbiddenAdmin);
      await expectRefusedNoCommit(server, () => restore(server, writer, { path: 'tr/a.md' }), 403, MSG4.forbiddenAdmin);
      expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.include('tr/a.md');
    });

    it("another organization's admin: 404, no commit", async () => {
      await expectRefusedNoCommit(server, () => restore(server, other, { path: 'tr/a.md' }), 404, MSG4.notFound);
      expectError(await get(server, reader, 'tr/a.md'), 404, MSG4.notFound);
    });

    it('not in the trash: 404 for a live item and for a path that never held one, no commit', async () => {
      await expectRefusedNoCommit(server, () => restore(server, admin.secret, { path: 'tr/live.md' }), 404, MSG4.notFound);
      await expectRefusedNoCommit(server, () => restore(server, admin.secret, { path: 'tr/never.md' }), 404, MSG4.notFound);
    });

    it('restores with one commit: same id and createdAt, content back, visible again', async () => {
      const before = await versions(server, admin.secret, 'tr/a.md');
      expect(before.map((v) => v.action)).to.deep.equal(['delete', 'create']);
      const res = await expectCommits(server, 1, () => restore(server, admin.secret, { path: 'tr/a.md' }));
      const item = itemOf(res);
      expect([item.id, item.path, item.content, item.createdAt, item.organizationId]).to.deep.equal([
        created['tr/a.md']?.id,
        'tr/a.md',
        'alpha\n',
        created['tr/a.md']?.createdAt,
        'default',
      ]);
      expect(itemOf(await ok(get(server, reader, 'tr/a.md'))).content).to.equal('alpha\n');
      expect(itemsOf(await list(server, reader)).map((i) => i.path)).to.include('tr/a.md');
      expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.deep.equal(['tr/secret.md']);
      expect(await git(['show', 'main:tr/a.md'], { gitdir: server.gitdir() })).to.equal('alpha\n');
    });

    it('the history continues: one more version, action restore, older versions unchanged', async () => {
      const vs = await versions(server, reader, 'tr/a.md');
      expect(vs.map((v) => [v.version, v.action])).to.deep.equal([
        [3, 'restore'],
        [2, 'delete'],
        [1, 'create'],
      ]);
      expect(vs[0]?.commitId).to.equal(await head(server));
      expect(vs[0]?.author).to.deep.equal({ name: 'Trash Admin', keyId: admin.id });
      await ok(put(server, writer, 'tr/a.md', { content: 'alpha 2\n' }));
      const after = await versions(server, reader, 'tr/a.md');
      expect(after.map((v) => [v.version, v.action])).to.deep.equal([
        [4, 'update'],
        [3, 'restore'],
        [2, 'delete'],
        [1, 'create'],
      ]);
      expect(after.slice(1)).to.deep.equal(vs);
      expect(itemOf(await ok(get(server, reader, 'tr/a.md'))).id).to.equal(created['tr/a.md']?.id);
    });

    it('restoring again: 404, no commit', async () => {
      await expectRefusedNoCommit(server, () => restore(server, admin.secret, { path: 'tr/a.md' }), 404, MSG4.notFound);
    });

    it('an invalid path: 400, no commit', async () => {
      await expectRefusedNoCommit(server, () => restore(server, admin.secret, { path: '.trash/tr/secret.md' }), 400, /^Invalid path: /);
      await expectRefusedNoCommit(server, () => restore(server, admin.secret, { path: 'tr' }), 400, 'Invalid path: must end with a file extension');
    });

    describe('bad bodies: 4xx, no commit, the item stays in the trash', () => {
      const cases: { name: string; body: unknown; message: RegExp }[] = [
        { name: 'missing path', body: {}, message: /path/ },
        { name: 'path as a number', body: { path: 7 }, message: /path/ },
        { name: 'path null', body: { path: null }, message: /path/ },
        { name: 'path as an array', body: { path: ['tr/secret.md'] }, message: /path/ },
        { name: 'unknown field', body: { path: 'tr/secret.md', force: true }, message: /force/ },
      ];
      for (const c of cases) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => restore(server, admin.secret, c.body), 400, c.message);
        });
      }
      for (const c of MALFORMED_BODIES) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => sendRaw(server, admin.secret, 'POST', '/trash/restore', c.body, c.contentType), c.status);
        });
      }
      it('tr/secret.md is still in the trash', async () => {
        expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.deep.equal(['tr/secret.md']);
        expectError(await get(server, admin.secret, 'tr/secret.md'), 404, MSG4.notFound);
      });
    });

    it('a missing or unknown key: 401, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash/restore'), { method: 'POST', body: { path: 'tr/secret.md' } }), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => restore(server, UNKNOWN_KEY, { path: 'tr/secret.md' }), 401, MSG4.invalidKey);
    });
  });

  describe('DELETE /trash/items/{path} (purge)', () => {
    let oldVersions: { commitId: string }[];

    before(async () => {
      await ok(del(server, admin.secret, 'tr/p.md'));
      oldVersions = await versions(server, admin.secret, 'tr/p.md');
      expect(oldVersions.length).to.equal(2);
    });

    it('while trashed, a PUT at the path is 409 and makes no commit', async () => {
      await expectRefusedNoCommit(server, () => put(server, writer, 'tr/p.md', { content: 'new' }), 409, MSG4.inTrash);
    });

    it('reader and writer: 403, no commit, still in the trash', async () => {
      await expectRefusedNoCommit(server, () => purge(server, reader, 'tr/p.md'), 403, MSG4.forbiddenAdmin);
      await expectRefusedNoCommit(server, () => purge(server, writer, 'tr/p.md'), 403, MSG4.forbiddenAdmin);
      expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.include('tr/p.md');
    });

    it("another organization's admin: 404, no commit", async () => {
      await expectRefusedNoCommit(server, () => purge(server, other, 'tr/p.md'), 404, MSG4.notFound);
      expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.include('tr/p.md');
    });

    it('not in the trash: 404 for a live item and for a path that never held one; the live item stays', async () => {
      await expectRefusedNoCommit(server, () => purge(server, admin.secret, 'tr/live.md'), 404, MSG4.notFound);
      await expectRefusedNoCommit(server, () => purge(server, admin.secret, 'tr/never.md'), 404, MSG4.notFound);
      expect(itemOf(await ok(get(server, reader, 'tr/live.md'))).content).to.equal('live\n');
    });

    it('an invalid path or a query parameter: 400, no commit', async () => {
      await expectRefusedNoCommit(server, () => purge(server, admin.secret, 'tr'), 400, 'Invalid path: must end with a file extension');
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash/items/tr/p.md?hard=1'), { method: 'DELETE', key: admin.secret }), 400);
    });

    it('a missing or unknown key: 401, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/trash/items/tr/p.md'), { method: 'DELETE' }), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => purge(server, UNKNOWN_KEY, 'tr/p.md'), 401, MSG4.invalidKey);
    });

    it('purges with one commit: gone from the trash, the tree, get and history', async () => {
      const res = await expectCommits(server, 1, () => purge(server, admin.secret, 'tr/p.md'));
      expect(res.body).to.deep.equal({ success: true, data: { message: MSG4.purged } });
      expect((await trashItems(server, admin.secret)).map((i) => i.path)).to.not.include('tr/p.md');
      expectError(await get(server, admin.secret, 'tr/p.md'), 404, MSG4.notFound);
      expectError(await api(urlOf(server, '/history/tr/p.md'), { key: admin.secret }), 404, MSG4.notFound);
      const tree = (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir: server.gitdir() })).split('\n');
      expect(tree.filter((p) => p.includes('tr/p.md')), 'no content, trash copy or record left in the tree').to.deep.equal([]);
      expect(tree).to.include('tr/live.md');
    });

    it('purging again: 404, no commit', async () => {
      await expectRefusedNoCommit(server, () => purge(server, admin.secret, 'tr/p.md'), 404, MSG4.notFound);
    });

    it('git history keeps the purged item', async () => {
      const gitdir = server.gitdir();
      const first = oldVersions[oldVersions.length - 1]?.commitId as string;
      expect(await git(['show', `${first}:tr/p.md`], { gitdir })).to.equal('old content\n');
      const log = (await git(['log', '--format=%H', 'main', '--', 'tr/p.md'], { gitdir })).trim().split('\n');
      expect(log).to.include(first);
    });

    it('the path is free again: a PUT creates a NEW item with a new id and its own history', async () => {
      const res = await expectCommits(server, 1, () => put(server, writer, 'tr/p.md', { content: 'new content\n' }));
      const item = itemOf(res);
      expect(item.id).to.match(UUID);
      expect(item.id).to.not.equal(created['tr/p.md']?.id);
      expect(item.createdAt).to.not.equal(created['tr/p.md']?.createdAt);
      expect(item.content).to.equal('new content\n');
      expect(itemOf(await ok(get(server, reader, 'tr/p.md'))).id).to.equal(item.id);
      const vs = await versions(server, reader, 'tr/p.md');
      expect(vs.map((v) => [v.version, v.action])).to.deep.equal([[1, 'create']]);
      expect(vs.map((v) => v.commitId)).to.not.include(oldVersions[0]?.commitId);
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
