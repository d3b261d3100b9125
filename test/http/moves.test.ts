import { join } from 'node:path';
import { expect } from 'chai';
import { ensureBuilt, runCli } from '../support/child.js';
import { fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { cloneUrl, gitOk, runGit } from '../git/support.js';
import { head, history, keyWithId, MALFORMED_BODIES, sendRaw, urlOf, versions } from './adminApi.js';
import { del, expectError, get, itemOf, list, MSG, put, type Item } from './helpers.js';

/** POST /move: an item to another path, with its id and history; every refusal changes nothing. */

type Body = Record<string, unknown>;

function move(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/move'), { method: 'POST', key, body });
}

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r;
}

/** The refusal's status and exact message, and main exactly where it was. */
async function refused(server: TestServer, send: () => Promise<ApiResponse>, status: number, message: string | RegExp): Promise<void> {
  const before = await head(server);
  expectError(await send(), status, message);
  expect(await head(server), 'main after a refused move').to.equal(before);
}

interface Change {
  id: string;
  path: string;
  change: string;
  commitId: string;
}

async function changes(server: TestServer, key: string, since: string): Promise<Change[]> {
  const res = await ok(api(urlOf(server, `/changes?since=${since}`), { key }));
  return (res.body?.data as { changes: Change[] }).changes;
}

async function searchPaths(server: TestServer, key: string, q: string): Promise<string[]> {
  const res = await ok(api(urlOf(server, `/search?q=${encodeURIComponent(q)}`), { key }));
  return (res.body?.data as { results: Array<{ path: string }> }).results.map((r) => r.path);
}

const taken = (path: string): string => `Path conflict: "${path}" is taken`;

describe('HTTP move: POST /move', function () {
  this.timeout(120_000);

  let server: TestServer;
  let admin: { secret: string; id: string; name: string };
  let writer: { secret: string; id: string; name: string };
  let reader: string;

  before(async () => {
    server = await startTestServer();
    admin = await keyWithId(server, 'admin', 'Ada Admin');
    writer = await keyWithId(server, 'writer', 'Walt Writer');
    reader = await server.key('reader');
  });

  after(async () => {
    await server?.close();
  });

  describe('a move', () => {
    let created: Item;
    let beforeMove: string;
    let moveCommit: string;
    let moved: ApiResponse;

    before(async () => {
      created = itemOf(await ok(put(server, writer.secret, 'mv/draft.md', { content: 'line one\n' })));
      await ok(put(server, writer.secret, 'mv/draft.md', { content: 'line one\nline two\n', message: 'Second line' }));
      beforeMove = await head(server);
      moved = await ok(move(server, writer.secret, { from: 'mv/draft.md', to: 'mv/final/report.md', message: 'File the report' }));
      moveCommit = await head(server);
    });

    it('answers the item as GET shows it at the new path, with its ETag: same id and createdAt, updated now', async () => {
      const item = itemOf(moved);
      const got = await ok(get(server, reader, 'mv/final/report.md'));
      expect(item).to.deep.equal(itemOf(got));
      expect(moved.headers.get('etag')).to.equal(got.headers.get('etag'));
      expect(item.id).to.equal(created.id);
      expect(item.createdAt).to.equal(created.createdAt);
      expect(item.path).to.equal('mv/final/report.md');
      expect(item.content).to.equal('line one\nline two\n');
      expect(Date.parse(item.updatedAt)).to.be.at.least(Date.parse(created.updatedAt));
    });

    it('is one commit, and the old path is gone for everyone', async () => {
      expect((await gitOk(['rev-list', '--count', `${beforeMove}..${moveCommit}`], { gitdir: server.gitdir() })).trim()).to.equal('1');
      expectError(await get(server, admin.secret, 'mv/draft.md'), 404, MSG.notFound);
      expectError(await history(server, admin.secret, 'mv/draft.md'), 404, MSG.notFound);
      const paths = (await ok(list(server, reader, '?prefix=mv/'))).body?.data?.items as Item[];
      expect(paths.map((i) => i.path)).to.deep.equal(['mv/final/report.md']);
    });

    it('shows in history as a version with action move, after the versions from before it', async () => {
      const vs = await versions(server, reader, 'mv/final/report.md');
      expect(vs.map((v) => [v.version, v.action, v.message])).to.deep.equal([
        [3, 'move', 'File the report'],
        [2, 'update', 'Second line'],
        [1, 'create', 'Create mv/draft.md'],
      ]);
      expect(vs[0]?.commitId).to.equal(moveCommit);
      expect(vs[0]?.author).to.deep.equal({ name: writer.name, keyId: writer.id });
    });

    it('serves versions from before the move at the new path (?version=n), as they were, old path included', async () => {
      const v1 = itemOf(await ok(api(`${urlOf(server, '/items/mv/final/report.md')}?version=1`, { key: reader })));
      expect(v1.content).to.equal('line one\n');
      expect(v1.path).to.equal('mv/draft.md');
      expect(v1.id).to.equal(created.id);
      const v3 = itemOf(await ok(api(`${urlOf(server, '/items/mv/final/report.md')}?version=3`, { key: reader })));
      expect(v3.path).to.equal('mv/final/report.md');
      expect(v3.content).to.equal('line one\nline two\n');
    });

    it('diffs across the move, each side under the path it had', async () => {
      const res = await ok(api(urlOf(server, '/diff/mv/final/report.md?from=1&to=3'), { key: reader }));
      const diff = (res.body?.data as { diff: string }).diff;
      expect(diff).to.include('--- a/mv/draft.md\tversion 1\n+++ b/mv/final/report.md\tversion 3\n');
      expect(diff).to.include('+line two\n');
      const same = (await ok(api(urlOf(server, '/diff/mv/final/report.md?from=2&to=3'), { key: reader }))).body?.data as { diff: string };
      expect(same.diff).to.not.match(/^[+-][^+-]/m);
    });

    it('is a rename for git log --follow in a C git clone', async () => {
      const work = await tmpDir('ks-move-clone');
      try {
        const dir = join(work.dir, 'clone');
        const run = await runGit(['clone', '--quiet', cloneUrl(server.url, admin.secret), dir]);
        expect(run.code, run.stderr).to.equal(0);
        const log = await gitOk(['log', '--follow', '--name-status', '--format=%s', '--', 'mv/final/report.md'], { cwd: dir });
        const lines = log.split('\n').filter((l) => l !== '');
        expect(lines).to.deep.equal([
          'File the report',
          'R100\tmv/draft.md\tmv/final/report.md',
          'Second line',
          'M\tmv/draft.md',
          'Create mv/draft.md',
          'A\tmv/draft.md',
        ]);
      } finally {
        await work.cleanup();
      }
    });

    it('appears in the change feed as the old path deleted and the new one created, both with the id and the move commit', async () => {
      const feed = await changes(server, reader, beforeMove);
      expect(feed.map((c) => [c.path, c.change, c.id, c.commitId])).to.deep.equal([
        ['mv/draft.md', 'deleted', created.id, moveCommit],
        ['mv/final/report.md', 'created', created.id, moveCommit],
      ]);
      // A copy made before the item existed only learns where it is now.
      const fromStart = (await changes(server, reader, await firstCommit(server))).filter((c) => c.id === created.id);
      expect(fromStart.map((c) => [c.path, c.change])).to.deep.equal([['mv/final/report.md', 'created']]);
    });

    it('can be rolled back to a version from before the move, at the new path', async () => {
      const res = await ok(api(urlOf(server, '/rollback'), { method: 'POST', key: writer.secret, body: { path: 'mv/final/report.md', version: 1 } }));
      expect(itemOf(res)).to.include({ path: 'mv/final/report.md', content: 'line one\n', id: created.id });
    });
  });

  describe('refusals (each with its status and message, and no commit)', () => {
    before(async () => {
      await ok(put(server, writer.secret, 'rf/item.md', { content: 'item\n' }));
      await ok(put(server, writer.secret, 'rf/other.md', { content: 'other\n' }));
      await ok(put(server, writer.secret, 'rf/folder/inside.md', { content: 'inside\n' }));
      await ok(put(server, writer.secret, 'rf/gone.md', { content: 'gone\n' }));
      await ok(del(server, admin.secret, 'rf/gone.md'));
    });

    const cases: Array<{ name: string; body: Body; status: number; message: string | RegExp }> = [
      { name: 'from holds no item', body: { from: 'rf/none.md', to: 'rf/new.md' }, status: 404, message: MSG.notFound },
      { name: 'from is in the trash', body: { from: 'rf/gone.md', to: 'rf/new.md' }, status: 409, message: MSG.inTrash },
      { name: 'to holds an item', body: { from: 'rf/item.md', to: 'rf/other.md' }, status: 409, message: taken('rf/other.md') },
      { name: 'to holds an item in the trash', body: { from: 'rf/item.md', to: 'rf/gone.md' }, status: 409, message: MSG.inTrash },
      {
        name: 'to is under an item',
        body: { from: 'rf/item.md', to: 'rf/other.md/x.md' },
        status: 409,
        message: 'Path conflict: "rf/other.md" is an item, not a folder',
      },
      {
        name: 'to is under the item itself',
        body: { from: 'rf/item.md', to: 'rf/item.md/x.md' },
        status: 409,
        message: 'Path conflict: "rf/item.md" is an item, not a folder',
      },
      { name: 'to names a folder (no extension)', body: { from: 'rf/item.md', to: 'rf/folder' }, status: 400, message: 'Invalid path: must end with a file extension' },
      { name: 'onto itself', body: { from: 'rf/item.md', to: 'rf/item.md' }, status: 400, message: 'from and to are the same path: nothing to move' },
      { name: 'an invalid from', body: { from: 'rf/../item.md', to: 'rf/new.md' }, status: 400, message: 'Invalid path: must not contain "." or ".." segments' },
      { name: 'an invalid to', body: { from: 'rf/item.md', to: 'Rf/New.md' }, status: 400, message: 'Invalid path: only lowercase letters, digits, "-", "_", "/" and "." are allowed' },
      { name: 'to under .trash/', body: { from: 'rf/item.md', to: '.trash/rf/item.md' }, status: 400, message: 'Invalid path: no segment may start with "."' },
      { name: 'an unknown field', body: { from: 'rf/item.md', to: 'rf/new.md', force: true }, status: 400, message: 'Unknown field "force"' },
      { name: 'no to', body: { from: 'rf/item.md' }, status: 400, message: 'to is required' },
      { name: 'no from', body: { to: 'rf/new.md' }, status: 400, message: 'from is required' },
      { name: 'a non-string to', body: { from: 'rf/item.md', to: 7 }, status: 400, message: 'to must be a string' },
      { name: 'an empty ifMatch', body: { from: 'rf/item.md', to: 'rf/new.md', ifMatch: '' }, status: 400, message: 'ifMatch must NOT have fewer than 1 characters' },
      { name: 'an empty message', body: { from: 'rf/item.md', to: 'rf/new.md', message: '  ' }, status: 400, message: 'message must not be empty' },
      { name: 'a stale ifMatch', body: { from: 'rf/item.md', to: 'rf/new.md', ifMatch: '"0000000000"' }, status: 412, message: MSG.changed },
    ];
    for (const c of cases) {
      it(`${c.status} when ${c.name}`, async () => {
        await refused(server, () => move(server, admin.secret, c.body), c.status, c.message);
      });
    }

    it('409 when to is a folder of other items (an item at a path with an extension that is also a folder)', async () => {
      await ok(put(server, writer.secret, 'rf/box.d/in.md', { content: 'in\n' }));
      await ok(put(server, writer.secret, 'rf/box.md/in.md', { content: 'in\n' }));
      await refused(server, () => move(server, writer.secret, { from: 'rf/item.md', to: 'rf/box.md' }), 409, 'Path conflict: "rf/box.md" is a folder of other items');
    });

    it('409 onto the folder that holds only the item itself (to must be free before the move)', async () => {
      await ok(put(server, writer.secret, 'rf/solo.md/only.md', { content: 'only\n' }));
      await refused(server, () => move(server, writer.secret, { from: 'rf/solo.md/only.md', to: 'rf/solo.md' }), 409, 'Path conflict: "rf/solo.md" is a folder of other items');
    });

    it('400 for a query parameter, malformed bodies, 415 for a non-JSON body, 405 for GET', async () => {
      await refused(server, () => api(urlOf(server, '/move?dry=1'), { method: 'POST', key: admin.secret, body: { from: 'rf/item.md', to: 'rf/new.md' } }), 400, 'Unknown query parameter "dry"');
      for (const m of MALFORMED_BODIES) {
        const before = await head(server);
        const res = await sendRaw(server, admin.secret, 'POST', '/move', m.body, m.contentType);
        expectError(res, m.status);
        expect(await head(server), m.name).to.equal(before);
      }
      expectError(await api(urlOf(server, '/move'), { key: admin.secret }), 405, 'Method not allowed');
    });

    it('a matching ifMatch, quoted as GET gives it or bare, lets the move through', async () => {
      const etag = (await ok(get(server, writer.secret, 'rf/item.md'))).headers.get('etag') as string;
      expect(etag).to.match(/^"[0-9a-f]+"$/);
      const res = await ok(move(server, writer.secret, { from: 'rf/item.md', to: 'rf/item2.md', ifMatch: etag }));
      const again = await ok(move(server, writer.secret, { from: 'rf/item2.md', to: 'rf/item.md', ifMatch: (res.headers.get('etag') as string).slice(1, -1) }));
      expect(itemOf(again).path).to.equal('rf/item.md');
    });
  });

  describe('permissions', () => {
    before(async () => {
      await ok(put(server, writer.secret, 'pm/open.md', { content: 'open\n' }));
      await ok(put(server, admin.secret, 'pm/locked.md', { content: 'locked\n', requiredWritePermission: 'knowledge:admin' }));
      await ok(put(server, admin.secret, 'pm/hidden.md', { content: 'hidden\n', requiredReadPermission: 'knowledge:admin' }));
      await ok(api(urlOf(server, '/folders/board'), { method: 'PUT', key: admin.secret, body: { requiredReadPermission: 'knowledge:admin' } }));
      await ok(api(urlOf(server, '/folders/frozen'), { method: 'PUT', key: admin.secret, body: { requiredWritePermission: 'knowledge:admin' } }));
    });

    it('a reader is refused before anything is looked at', async () => {
      await refused(server, () => move(server, reader, { from: 'pm/open.md', to: 'pm/new.md' }), 403, MSG.forbiddenWrite);
      await refused(server, () => move(server, reader, { from: 'pm/none.md', to: 'pm/new.md' }), 403, MSG.forbiddenWrite);
    });

    it('a writer cannot move an item only admins may change', async () => {
      await refused(server, () => move(server, writer.secret, { from: 'pm/locked.md', to: 'pm/new.md' }), 403, MSG.forbiddenAdmin);
    });

    it('a writer cannot move an item where a folder rule lets only admins read or only admins write', async () => {
      await refused(server, () => move(server, writer.secret, { from: 'pm/open.md', to: 'board/open.md' }), 403, MSG.forbiddenAdmin);
      await refused(server, () => move(server, writer.secret, { from: 'pm/open.md', to: 'frozen/open.md' }), 403, MSG.forbiddenAdmin);
    });

    it('an item the role may not read is absent: 404 as for no item at all, live or in the trash', async () => {
      await refused(server, () => move(server, writer.secret, { from: 'pm/hidden.md', to: 'pm/new.md' }), 404, MSG.notFound);
      await refused(server, () => move(server, writer.secret, { from: 'pm/hidden.md', to: 'pm/hidden.md' }), 400, 'from and to are the same path: nothing to move');
      await ok(put(server, admin.secret, 'pm/hidden-gone.md', { content: 'x\n', requiredReadPermission: 'knowledge:admin' }));
      await ok(del(server, admin.secret, 'pm/hidden-gone.md'));
      await refused(server, () => move(server, writer.secret, { from: 'pm/hidden-gone.md', to: 'pm/new.md' }), 404, MSG.notFound);
    });

    it('a path held by an item the role may not read is only "taken", live or in the trash', async () => {
      await refused(server, () => move(server, writer.secret, { from: 'pm/open.md', to: 'pm/hidden.md' }), 409, taken('pm/hidden.md'));
      await refused(server, () => move(server, writer.secret, { from: 'pm/open.md', to: 'pm/hidden-gone.md' }), 409, taken('pm/hidden-gone.md'));
    });

    it('an admin moves into the admin-only folder; the item is then hidden from the writer, and the feed says so', async () => {
      const since = await head(server);
      const item = itemOf(await ok(move(server, admin.secret, { from: 'pm/open.md', to: 'board/open.md' })));
      expectError(await get(server, writer.secret, 'board/open.md'), 404, MSG.notFound);
      expect((await changes(server, writer.secret, since)).map((c) => [c.path, c.change, c.id])).to.deep.equal([['pm/open.md', 'deleted', item.id]]);
      expect((await changes(server, admin.secret, since)).map((c) => [c.path, c.change])).to.deep.equal([
        ['pm/open.md', 'deleted'],
        ['board/open.md', 'created'],
      ]);
      // And back out, by an admin: for the writer, it appears.
      const back = await head(server);
      await ok(move(server, admin.secret, { from: 'board/open.md', to: 'pm/open.md' }));
      expect((await changes(server, writer.secret, back)).map((c) => [c.path, c.change])).to.deep.equal([['pm/open.md', 'created']]);
    });
  });

  describe('with search, trash and moving back', () => {
    it('search finds the item at its new path, by path and content, and no longer at the old one', async () => {
      await ok(put(server, writer.secret, 'srch/oldname.md', { content: 'quokka habitat notes\n' }));
      expect(await searchPaths(server, reader, 'quokka')).to.deep.equal(['srch/oldname.md']);
      await ok(move(server, writer.secret, { from: 'srch/oldname.md', to: 'srch/newname.md' }));
      expect(await searchPaths(server, reader, 'quokka')).to.deep.equal(['srch/newname.md']);
      expect(await searchPaths(server, reader, 'newname')).to.deep.equal(['srch/newname.md']);
      expect(await searchPaths(server, reader, 'oldname')).to.deep.equal([]);
    });

    it('a moved item goes to the trash and comes back at its new path, with its id and whole history', async () => {
      const item = itemOf(await ok(put(server, writer.secret, 'tr/before.md', { content: 'to trash\n' })));
      await ok(move(server, writer.secret, { from: 'tr/before.md', to: 'tr/after.md' }));
      await ok(del(server, admin.secret, 'tr/after.md'));
      const trash = (await ok(api(urlOf(server, '/trash'), { key: admin.secret }))).body?.data?.items as Item[];
      expect(trash.filter((i) => i.id === item.id).map((i) => i.path)).to.deep.equal(['tr/after.md']);
      await refused(server, () => move(server, writer.secret, { from: 'tr/after.md', to: 'tr/again.md' }), 409, MSG.inTrash);
      const restored = itemOf(await ok(api(urlOf(server, '/trash/restore'), { method: 'POST', key: admin.secret, body: { path: 'tr/after.md' } })));
      expect(restored).to.include({ id: item.id, path: 'tr/after.md', content: 'to trash\n' });
      expect((await versions(server, reader, 'tr/after.md')).map((v) => v.action)).to.deep.equal(['restore', 'delete', 'move', 'create']);
      expectError(await get(server, reader, 'tr/before.md'), 404, MSG.notFound);
    });

    it('moves there and back: the same item, two move versions, and for a copy from before, just an update', async () => {
      const item = itemOf(await ok(put(server, writer.secret, 'rt/a.md', { content: 'round trip\n' })));
      const since = await head(server);
      await ok(move(server, writer.secret, { from: 'rt/a.md', to: 'rt/b/c.md' }));
      const back = itemOf(await ok(move(server, writer.secret, { from: 'rt/b/c.md', to: 'rt/a.md' })));
      expect(back).to.include({ id: item.id, createdAt: item.createdAt, path: 'rt/a.md' });
      expect((await versions(server, reader, 'rt/a.md')).map((v) => v.action)).to.deep.equal(['move', 'move', 'create']);
      expectError(await get(server, reader, 'rt/b/c.md'), 404, MSG.notFound);
      expect((await changes(server, reader, since)).map((c) => [c.path, c.change])).to.deep.equal([['rt/a.md', 'updated']]);
      // Part way: a copy made after the first move sees the item leave rt/b/c.md.
      const middle = (await versions(server, reader, 'rt/a.md'))[1]?.commitId as string;
      expect((await changes(server, reader, middle)).map((c) => [c.path, c.change])).to.deep.equal([
        ['rt/b/c.md', 'deleted'],
        ['rt/a.md', 'created'],
      ]);
      expect(await searchPaths(server, reader, '"round trip"')).to.deep.equal(['rt/a.md']);
      await fsckStrict(server.gitdir());
    });
  });
});

/** The organization's first commit (before any item). */
async function firstCommit(server: TestServer): Promise<string> {
  return (await gitOk(['rev-list', '--max-parents=0', 'main'], { gitdir: server.gitdir() })).trim();
}

describe('HTTP move: verify after moves', function () {
  this.timeout(120_000);

  it('knowledge-store verify is clean (fsck, records against the tree, the search index) after moves of every kind', async () => {
    await ensureBuilt();
    const data = await tmpDir('ks-move-verify');
    const server = await startTestServer({ dataDir: data.dir });
    const key = server.adminKey;
    try {
      await ok(put(server, key, 'v/a.md', { content: 'a\n' }));
      await ok(put(server, key, 'v/deep/b.md', { content: 'b\n' }));
      await ok(move(server, key, { from: 'v/a.md', to: 'w/x/y/a.md' }));
      await ok(move(server, key, { from: 'v/deep/b.md', to: 'b.md' }));
      await ok(move(server, key, { from: 'b.md', to: 'v/deep/b.md' }));
      await ok(del(server, key, 'w/x/y/a.md'));
      await ok(api(urlOf(server, '/trash/restore'), { method: 'POST', key, body: { path: 'w/x/y/a.md' } }));
      await ok(put(server, key, 'v/a.md', { content: 'a new item where the first one was\n' }));
      await Promise.all([
        ok(move(server, key, { from: 'v/a.md', to: 'v/c.md' })),
        ok(put(server, key, 'v/a.md', { content: 'and another, in the same group commit\n' })),
      ]);
      await server.close();
      // The server is gone: verify holds the data directory, so it checks the search index too.
      const run = await runCli(['verify', '--data-dir', data.dir]);
      expect(run.code, `${run.stdout}${run.stderr}`).to.equal(0);
      // The last two raced: 3 items (the put updated v/a.md, then it moved) or 4 (the move came first).
      expect(run.stdout).to.match(/^default: OK \([34] items, 0 in trash, head [0-9a-f]{12}, search index in step\)$/m);
    } finally {
      await server.close();
      await data.cleanup();
    }
  });
});
