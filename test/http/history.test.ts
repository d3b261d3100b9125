import { readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import {
  COMMIT,
  expectCommits,
  expectRefusedNoCommit,
  head,
  history,
  ISO,
  keyWithId,
  MALFORMED_BODIES,
  MSG4,
  sendRaw,
  UNKNOWN_KEY,
  urlOf,
  versions,
  type Version,
} from './adminApi.js';
import { del, expectError, get, itemOf, itemUrl, put, type Item } from './helpers.js';

/** GET /items/{path}?<query>. */
function getAt(server: TestServer, key: string, path: string, query: string): Promise<ApiResponse> {
  return api(`${itemUrl(server, path)}?${query}`, { key });
}

function diff(server: TestServer, key: string, path: string, query: string): Promise<ApiResponse> {
  return api(urlOf(server, `/diff/${path}?${query}`), { key });
}

function rollback(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/rollback'), { method: 'POST', key, body });
}

function restore(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return api(urlOf(server, '/trash/restore'), { method: 'POST', key, body: { path } });
}

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r;
}

/** History without the timestamps (checked separately), for exact comparison. */
const strip = (vs: Version[]): Omit<Version, 'timestamp'>[] => vs.map(({ timestamp: _t, ...rest }) => rest);

describe('HTTP history: GET /history/{path}, ?version, ?ref, /diff, /rollback', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: { secret: string; id: string; name: string };
  let writer: { secret: string; id: string; name: string };
  let reader: string;
  let other: string;
  /** The commit before hist/doc.md existed, then one commit per step of its life. */
  let beforeDoc: string;
  const doc: string[] = [];
  let docItem: Item;
  let t0: number;
  let t1: number;

  before(async () => {
    server = await startTestServer();
    admin = await keyWithId(server, 'admin', 'Ada Admin');
    writer = await keyWithId(server, 'writer', 'Walt Writer');
    reader = await server.key('reader');
    other = await server.org('other');
    expect((await put(server, other, 'other/seed.md', { content: 'other org' })).status).to.equal(200);

    t0 = Date.now();
    beforeDoc = await head(server);
    docItem = itemOf(await ok(put(server, writer.secret, 'hist/doc.md', { content: 'v1\n' })));
    doc.push(await head(server));
    await ok(put(server, writer.secret, 'hist/doc.md', { content: 'v2\n', message: 'Second draft' }));
    doc.push(await head(server));
    await ok(put(server, admin.secret, 'hist/doc.md', { content: 'v2\n', requiredWritePermission: 'knowledge:admin' }));
    doc.push(await head(server));
    await ok(del(server, admin.secret, 'hist/doc.md'));
    doc.push(await head(server));
    await ok(restore(server, admin.secret, 'hist/doc.md'));
    doc.push(await head(server));
    t1 = Date.now();

    await ok(put(server, admin.secret, 'hist/admin-only.md', { content: 'secret', requiredReadPermission: 'knowledge:admin' }));
    await ok(put(server, admin.secret, 'hist/writers.md', { content: 'for writers', requiredReadPermission: 'knowledge:write' }));
    await ok(put(server, writer.secret, 'hist/trashed.md', { content: 'bin me' }));
    await ok(del(server, admin.secret, 'hist/trashed.md'));
    await ok(put(server, admin.secret, 'hist/trashed-secret.md', { content: 'bin me too', requiredReadPermission: 'knowledge:admin' }));
    await ok(del(server, admin.secret, 'hist/trashed-secret.md'));
  });
  after(() => server?.close());

  describe('GET /history/{path}', () => {
    it('lists every version newest first: version, commitId, action, message, author {name, keyId}, timestamp', async () => {
      const vs = await versions(server, admin.secret, 'hist/doc.md');
      for (const v of vs) expect(Object.keys(v).sort()).to.deep.equal(['action', 'author', 'commitId', 'message', 'timestamp', 'version']);
      expect(strip(vs)).to.deep.equal([
        { version: 5, commitId: doc[4], action: 'restore', message: 'Restore hist/doc.md', author: { name: 'Ada Admin', keyId: admin.id } },
        { version: 4, commitId: doc[3], action: 'delete', message: 'Delete hist/doc.md', author: { name: 'Ada Admin', keyId: admin.id } },
        { version: 3, commitId: doc[2], action: 'permissions', message: 'Change permissions of hist/doc.md', author: { name: 'Ada Admin', keyId: admin.id } },
        { version: 2, commitId: doc[1], action: 'update', message: 'Second draft', author: { name: 'Walt Writer', keyId: writer.id } },
        { version: 1, commitId: doc[0], action: 'create', message: 'Create hist/doc.md', author: { name: 'Walt Writer', keyId: writer.id } },
      ]);
    });

    it('timestamps are ISO 8601, within the time the changes were made, newest first', async () => {
      const vs = await versions(server, admin.secret, 'hist/doc.md');
      const times = vs.map((v) => {
        expect(v.timestamp).to.match(ISO);
        return Date.parse(v.timestamp);
      });
      for (const t of times) {
        expect(t).to.be.at.least(Math.floor(t0 / 1000) * 1000);
        expect(t).to.be.at.most(Math.ceil(t1 / 1000) * 1000);
      }
      expect([...times].sort((a, b) => b - a)).to.deep.equal(times);
    });

    it("commit ids are commits of main (C git), each with the version's message as subject", async () => {
      const gitdir = server.gitdir();
      const onMain = new Set((await git(['rev-list', 'main'], { gitdir })).trim().split('\n'));
      for (const v of await versions(server, reader, 'hist/doc.md')) {
        expect(v.commitId).to.match(COMMIT);
        expect(onMain.has(v.commitId), v.commitId).to.equal(true);
        const subject = (await git(['log', '-1', '--format=%s', v.commitId], { gitdir })).trim();
        expect(subject).to.equal(v.message);
      }
    });

    it('reader, writer and admin see the same history of an item they may all read', async () => {
      const a = await versions(server, admin.secret, 'hist/doc.md');
      expect(await versions(server, writer.secret, 'hist/doc.md')).to.deep.equal(a);
      expect(await versions(server, reader, 'hist/doc.md')).to.deep.equal(a);
    });

    it('an item only admins may read: 404 for reader and writer, history for admin', async () => {
      expectError(await history(server, reader, 'hist/admin-only.md'), 404, MSG4.notFound);
      expectError(await history(server, writer.secret, 'hist/admin-only.md'), 404, MSG4.notFound);
      expect(strip(await versions(server, admin.secret, 'hist/admin-only.md')).map((v) => [v.version, v.action])).to.deep.equal([[1, 'create']]);
    });

    it('an item that needs knowledge:write to read: 404 for reader, history for writer', async () => {
      expectError(await history(server, reader, 'hist/writers.md'), 404, MSG4.notFound);
      expect((await versions(server, writer.secret, 'hist/writers.md')).length).to.equal(1);
    });

    it('a trashed item keeps its history for roles that may see it', async () => {
      expect((await versions(server, reader, 'hist/trashed.md')).map((v) => [v.version, v.action])).to.deep.equal([
        [2, 'delete'],
        [1, 'create'],
      ]);
      expect((await versions(server, admin.secret, 'hist/trashed-secret.md')).map((v) => [v.version, v.action])).to.deep.equal([
        [2, 'delete'],
        [1, 'create'],
      ]);
    });

    it('a trashed item hidden from the role: 404', async () => {
      expectError(await history(server, reader, 'hist/trashed-secret.md'), 404, MSG4.notFound);
      expectError(await history(server, writer.secret, 'hist/trashed-secret.md'), 404, MSG4.notFound);
    });

    it("another organization's admin: 404; its own item at the same path has its own history", async () => {
      expectError(await history(server, other, 'hist/doc.md'), 404, MSG4.notFound);
      expectError(await history(server, other, 'hist/admin-only.md'), 404, MSG4.notFound);
      await ok(put(server, other, 'hist/doc.md', { content: 'other org doc' }));
      const theirs = await versions(server, other, 'hist/doc.md');
      expect(theirs.map((v) => [v.version, v.action])).to.deep.equal([[1, 'create']]);
      expect(doc).to.not.include(theirs[0]?.commitId);
      expect((await versions(server, admin.secret, 'hist/doc.md')).length).to.equal(5);
    });

    it('a path that never held an item: 404 for every role', async () => {
      for (const key of [reader, writer.secret, admin.secret]) expectError(await history(server, key, 'hist/never.md'), 404, MSG4.notFound);
    });

    it('an invalid path: 400 naming the rule; unknown query parameter: 400', async () => {
      expectError(await history(server, admin.secret, 'hist'), 400, 'Invalid path: must end with a file extension');
      expectError(await history(server, admin.secret, 'Hist/Doc.md'), 400, /^Invalid path: /);
      expectError(await api(urlOf(server, '/history/hist/doc.md?version=1'), { key: admin.secret }), 400);
    });

    it('wrong method on the history, diff and rollback routes: 405, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/history/hist/doc.md'), { method: 'POST', key: admin.secret, body: {} }), 405);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/diff/hist/doc.md?from=1&to=2'), { method: 'PUT', key: admin.secret, body: {} }), 405);
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/rollback'), { key: admin.secret }), 405);
    });

    it('a missing or unknown key: 401 Invalid API key', async () => {
      expectError(await api(urlOf(server, '/history/hist/doc.md')), 401, MSG4.invalidKey);
      expectError(await history(server, UNKNOWN_KEY, 'hist/doc.md'), 401, MSG4.invalidKey);
      expectError(await history(server, UNKNOWN_KEY, 'hist/never.md'), 401, MSG4.invalidKey);
    });
  });

  describe('GET /items/{path}?version=n', () => {
    it('returns the item as each version left it: content, permissions, same id', async () => {
      const expected: [number, string, string][] = [
        [1, 'v1\n', 'inherit'],
        [2, 'v2\n', 'inherit'],
        [3, 'v2\n', 'knowledge:admin'],
        [5, 'v2\n', 'knowledge:admin'],
      ];
      for (const [n, content, write] of expected) {
        const item = itemOf(await ok(getAt(server, reader, 'hist/doc.md', `version=${n}`)));
        expect([item.id, item.path, item.content, item.requiredWritePermission, item.createdAt], `version ${n}`).to.deep.equal([
          docItem.id,
          'hist/doc.md',
          content,
          write,
          docItem.createdAt,
        ]);
      }
    });

    it('an unknown version: 404 Version not found', async () => {
      for (const n of [6, 99, 100000]) expectError(await getAt(server, admin.secret, 'hist/doc.md', `version=${n}`), 404, MSG4.versionNotFound);
    });

    it('a version that is not a positive integer: 400', async () => {
      for (const v of ['0', '-1', 'abc', '1.5', '']) expectError(await getAt(server, admin.secret, 'hist/doc.md', `version=${v}`), 400);
    });

    it('hidden items stay hidden: 404 Knowledge item not found, not Version not found', async () => {
      expectError(await getAt(server, reader, 'hist/admin-only.md', 'version=1'), 404, MSG4.notFound);
      expectError(await getAt(server, writer.secret, 'hist/admin-only.md', 'version=9'), 404, MSG4.notFound);
      expect(itemOf(await ok(getAt(server, admin.secret, 'hist/admin-only.md', 'version=1'))).content).to.equal('secret');
      expectError(await getAt(server, other, 'hist/writers.md', 'version=1'), 404, MSG4.notFound);
      expectError(await getAt(server, reader, 'hist/never.md', 'version=1'), 404, MSG4.notFound);
    });
  });

  describe('GET /items/{path}?ref=<commit>', () => {
    it('returns the item as it was at that commit', async () => {
      const at = async (ref: string): Promise<string | undefined> => itemOf(await ok(getAt(server, reader, 'hist/doc.md', `ref=${ref}`))).content;
      expect(await at(doc[0] as string)).to.equal('v1\n');
      expect(await at(doc[1] as string)).to.equal('v2\n');
      expect(await at(doc[4] as string)).to.equal('v2\n');
      const item = itemOf(await ok(getAt(server, reader, 'hist/doc.md', `ref=${doc[0]}`)));
      expect(item.id).to.equal(docItem.id);
      expect(item.requiredWritePermission).to.equal('inherit');
    });

    it('404 at a commit where the item did not exist yet, or was in the trash', async () => {
      expectError(await getAt(server, reader, 'hist/doc.md', `ref=${beforeDoc}`), 404, MSG4.notFound);
      expectError(await getAt(server, reader, 'hist/doc.md', `ref=${doc[3]}`), 404, MSG4.notFound);
    });

    it('404, not 500, for a path under what was a file at that commit (hist/doc.md/x.md)', async () => {
      const now = await head(server);
      for (const key of [reader, admin.secret]) {
        expectError(await getAt(server, key, 'hist/doc.md/x.md', `ref=${now}`), 404, MSG4.notFound);
        expectError(await getAt(server, key, 'hist/doc.md/x.md', `ref=${doc[0]}`), 404, MSG4.notFound);
      }
    });

    it('a ref that is not a commit of this organization: 400', async () => {
      const theirs = await head(server, 'other');
      for (const ref of [theirs, '0'.repeat(40), 'abc', (doc[0] as string).slice(0, 7), 'main', 'HEAD']) {
        expectError(await getAt(server, admin.secret, 'hist/doc.md', `ref=${ref}`), 400);
      }
      // ...and the other organization may not use this one's commits either.
      expectError(await getAt(server, other, 'hist/doc.md', `ref=${doc[0]}`), 400);
    });

    it('hidden from the role: 404', async () => {
      const now = await head(server);
      expectError(await getAt(server, reader, 'hist/admin-only.md', `ref=${now}`), 404, MSG4.notFound);
      expect(itemOf(await ok(getAt(server, admin.secret, 'hist/admin-only.md', `ref=${now}`))).content).to.equal('secret');
    });

    it('version and ref together: 400', async () => {
      expectError(await getAt(server, admin.secret, 'hist/doc.md', `version=1&ref=${doc[0]}`), 400);
    });
  });

  describe('GET /diff/{path}?from=n&to=m', () => {
    const A = 'alpha\nbeta\ngamma\n';
    const B = 'alpha\nBETA\ngamma\ndelta\n';
    const C = 'alpha\nBETA';
    const SEP = '===================================================================\n';

    before(async () => {
      await ok(put(server, writer.secret, 'hist/diff.md', { content: A }));
      await ok(put(server, writer.secret, 'hist/diff.md', { content: B }));
      await ok(put(server, writer.secret, 'hist/diff.md', { content: C }));
      await ok(put(server, admin.secret, 'hist/diff-secret.md', { content: A, requiredReadPermission: 'knowledge:admin' }));
      await ok(put(server, admin.secret, 'hist/diff-secret.md', { content: B }));
    });

    const diffText = async (key: string, path: string, from: number, to: number): Promise<string> => {
      const res = await ok(diff(server, key, path, `from=${from}&to=${to}`));
      expect(res.body?.success).to.equal(true);
      expect(res.body?.data?.diff).to.be.a('string');
      return res.body?.data?.diff as string;
    };

    it('version 1 -> 2: the exact unified diff', async () => {
      expect(await diffText(reader, 'hist/diff.md', 1, 2)).to.equal(
        SEP +
          '--- a/hist/diff.md\tversion 1\n' +
          '+++ b/hist/diff.md\tversion 2\n' +
          '@@ -1,3 +1,4 @@\n' +
          ' alpha\n' +
          '-beta\n' +
          '+BETA\n' +
          ' gamma\n' +
          '+delta\n',
      );
    });

    it('version 2 -> 1: the reverse diff', async () => {
      expect(await diffText(writer.secret, 'hist/diff.md', 2, 1)).to.equal(
        SEP +
          '--- a/hist/diff.md\tversion 2\n' +
          '+++ b/hist/diff.md\tversion 1\n' +
          '@@ -1,4 +1,3 @@\n' +
          ' alpha\n' +
          '-BETA\n' +
          '+beta\n' +
          ' gamma\n' +
          '-delta\n',
      );
    });

    it('version 2 -> 3: a last line without newline is marked', async () => {
      expect(await diffText(admin.secret, 'hist/diff.md', 2, 3)).to.equal(
        SEP +
          '--- a/hist/diff.md\tversion 2\n' +
          '+++ b/hist/diff.md\tversion 3\n' +
          '@@ -1,4 +1,2 @@\n' +
          ' alpha\n' +
          '-BETA\n' +
          '-gamma\n' +
          '-delta\n' +
          '+BETA\n' +
          '\\ No newline at end of file\n',
      );
    });

    it('a version with itself: headers and no hunk', async () => {
      expect(await diffText(reader, 'hist/diff.md', 2, 2)).to.equal(SEP + '--- a/hist/diff.md\tversion 2\n+++ b/hist/diff.md\tversion 2\n');
    });

    it('hidden from the role: 404 (reader, writer, another organization), admin gets the diff', async () => {
      expectError(await diff(server, reader, 'hist/diff-secret.md', 'from=1&to=2'), 404, MSG4.notFound);
      expectError(await diff(server, writer.secret, 'hist/diff-secret.md', 'from=1&to=2'), 404, MSG4.notFound);
      expectError(await diff(server, other, 'hist/diff.md', 'from=1&to=2'), 404, MSG4.notFound);
      expect(await diffText(admin.secret, 'hist/diff-secret.md', 1, 2)).to.contain('\n+delta\n');
    });

    it('an unknown version: 404 Version not found; a path that never held an item: 404', async () => {
      expectError(await diff(server, reader, 'hist/diff.md', 'from=1&to=4'), 404, MSG4.versionNotFound);
      expectError(await diff(server, reader, 'hist/diff.md', 'from=9&to=1'), 404, MSG4.versionNotFound);
      expectError(await diff(server, reader, 'hist/nope.md', 'from=1&to=2'), 404, MSG4.notFound);
    });

    it('missing or bad from/to, or another parameter: 400', async () => {
      for (const q of ['from=1', 'to=2', '', 'from=0&to=1', 'from=a&to=1', 'from=1&to=-2', 'from=1&to=2&x=1']) {
        expectError(await diff(server, reader, 'hist/diff.md', q), 400);
      }
    });

    it('a missing or unknown key: 401', async () => {
      expectError(await api(urlOf(server, '/diff/hist/diff.md?from=1&to=2')), 401, MSG4.invalidKey);
      expectError(await diff(server, UNKNOWN_KEY, 'hist/diff.md', 'from=1&to=2'), 401, MSG4.invalidKey);
    });
  });

  describe('POST /rollback {path, version}', () => {
    let roll: Item;

    before(async () => {
      roll = itemOf(await ok(put(server, writer.secret, 'hist/roll.md', { content: 'first\n' })));
      await ok(put(server, writer.secret, 'hist/roll.md', { content: 'second\n' }));
      await ok(put(server, writer.secret, 'hist/roll.md', { content: 'third\n' }));
      await ok(put(server, admin.secret, 'hist/locked.md', { content: 'L1', requiredWritePermission: 'knowledge:admin' }));
      await ok(put(server, admin.secret, 'hist/locked.md', { content: 'L2' }));
    });

    const content = async (path: string): Promise<string | undefined> => itemOf(await ok(get(server, admin.secret, path))).content;

    it('writer: exactly one commit, content equal to that version, same id, history +1', async () => {
      const res = await expectCommits(server, 1, () => rollback(server, writer.secret, { path: 'hist/roll.md', version: 1 }));
      const item = itemOf(res);
      expect([item.id, item.path, item.content, item.createdAt]).to.deep.equal([roll.id, 'hist/roll.md', 'first\n', roll.createdAt]);
      expect(await content('hist/roll.md')).to.equal('first\n');
      expect(await git(['show', 'main:hist/roll.md'], { gitdir: server.gitdir() })).to.equal('first\n');
      const vs = await versions(server, reader, 'hist/roll.md');
      expect(vs.length).to.equal(4);
      expect(strip(vs)[0]).to.deep.include({ version: 4, action: 'update', author: { name: 'Walt Writer', keyId: writer.id }, commitId: await head(server) });
      expect(vs[0]?.message).to.equal('Roll back hist/roll.md to version 1');
      expect(itemOf(await ok(getAt(server, reader, 'hist/roll.md', 'version=4'))).content).to.equal('first\n');
      expect(itemOf(await ok(getAt(server, reader, 'hist/roll.md', 'version=3'))).content).to.equal('third\n');
    });

    it('admin may roll back too: one commit, content of version 2', async () => {
      const res = await expectCommits(server, 1, () => rollback(server, admin.secret, { path: 'hist/roll.md', version: 2 }));
      expect(itemOf(res).content).to.equal('second\n');
      expect(await content('hist/roll.md')).to.equal('second\n');
      expect((await versions(server, admin.secret, 'hist/roll.md')).length).to.equal(5);
    });

    it('reader: 403 Forbidden — requires knowledge:write permission, no commit', async () => {
      await expectRefusedNoCommit(server, () => rollback(server, reader, { path: 'hist/roll.md', version: 1 }), 403, MSG4.forbiddenWrite);
      expect(await content('hist/roll.md')).to.equal('second\n');
    });

    it("another organization's admin: 404, no commit in either organization", async () => {
      const theirs = await commitCount(server.gitdir('other'));
      await expectRefusedNoCommit(server, () => rollback(server, other, { path: 'hist/roll.md', version: 1 }), 404, MSG4.notFound);
      expect(await commitCount(server.gitdir('other'))).to.equal(theirs);
    });

    it('an unknown version: 404 Version not found; an unknown path: 404; no commit', async () => {
      await expectRefusedNoCommit(server, () => rollback(server, writer.secret, { path: 'hist/roll.md', version: 99 }), 404, MSG4.versionNotFound);
      await expectRefusedNoCommit(server, () => rollback(server, writer.secret, { path: 'hist/nope.md', version: 1 }), 404, MSG4.notFound);
    });

    it('a trashed item: 409, no commit, the item stays in the trash', async () => {
      await expectRefusedNoCommit(server, () => rollback(server, admin.secret, { path: 'hist/trashed.md', version: 1 }), 409, MSG4.inTrash);
      expectError(await get(server, admin.secret, 'hist/trashed.md'), 404, MSG4.notFound);
    });

    it('an item whose write permission the role lacks: 403, no commit; admin may', async () => {
      await expectRefusedNoCommit(server, () => rollback(server, writer.secret, { path: 'hist/locked.md', version: 1 }), 403, MSG4.forbiddenAdmin);
      expect(await content('hist/locked.md')).to.equal('L2');
      const res = await expectCommits(server, 1, () => rollback(server, admin.secret, { path: 'hist/locked.md', version: 1 }));
      expect(itemOf(res).content).to.equal('L1');
      expect(itemOf(res).requiredWritePermission).to.equal('knowledge:admin');
    });

    it('an item hidden from the role: 404, no commit', async () => {
      await expectRefusedNoCommit(server, () => rollback(server, writer.secret, { path: 'hist/admin-only.md', version: 1 }), 404, MSG4.notFound);
    });

    describe('bad bodies: 4xx and no commit', () => {
      const cases: { name: string; body: unknown; status: number; message?: RegExp }[] = [
        { name: 'empty object', body: {}, status: 400, message: /required/ },
        { name: 'missing version', body: { path: 'hist/roll.md' }, status: 400, message: /version/ },
        { name: 'missing path', body: { version: 1 }, status: 400, message: /path/ },
        { name: 'version as a string', body: { path: 'hist/roll.md', version: '1' }, status: 400, message: /version/ },
        { name: 'version 0', body: { path: 'hist/roll.md', version: 0 }, status: 400, message: /version/ },
        { name: 'version 1.5', body: { path: 'hist/roll.md', version: 1.5 }, status: 400, message: /version/ },
        { name: 'version null', body: { path: 'hist/roll.md', version: null }, status: 400, message: /version/ },
        { name: 'path as a number', body: { path: 5, version: 1 }, status: 400, message: /path/ },
        { name: 'unknown field', body: { path: 'hist/roll.md', version: 1, force: true }, status: 400, message: /force/ },
        { name: 'invalid path', body: { path: 'Bad Path.md', version: 1 }, status: 400, message: /^Invalid path: / },
        { name: 'a folder path', body: { path: 'hist', version: 1 }, status: 400, message: /^Invalid path: / },
      ];
      for (const c of cases) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => rollback(server, admin.secret, c.body), c.status, c.message);
        });
      }
      for (const c of MALFORMED_BODIES) {
        it(c.name, async () => {
          await expectRefusedNoCommit(server, () => sendRaw(server, admin.secret, 'POST', '/rollback', c.body, c.contentType), c.status);
        });
      }
      it('left the item as it was', async () => {
        expect(await content('hist/roll.md')).to.equal('second\n');
        expect((await versions(server, admin.secret, 'hist/roll.md')).length).to.equal(5);
      });
    });

    it('a missing or unknown key: 401, no commit', async () => {
      await expectRefusedNoCommit(server, () => api(urlOf(server, '/rollback'), { method: 'POST', body: { path: 'hist/roll.md', version: 1 } }), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => rollback(server, UNKNOWN_KEY, { path: 'hist/roll.md', version: 1 }), 401, MSG4.invalidKey);
      await expectRefusedNoCommit(server, () => rollback(server, UNKNOWN_KEY, '{bad json'), 401, MSG4.invalidKey);
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

describe('HTTP history: survives restarts, and a lost or damaged history log is rebuilt', function () {
  this.timeout(60_000);

  let data: { dir: string; cleanup: () => Promise<void> };
  let server: TestServer | undefined;
  let adminKey: string;
  let writerKey: string;
  let readerKey: string;
  let logFile: string;
  let firstCommit: string;
  /** What the API says before any restart: the reference every restart must reproduce. */
  let reference: { a: Version[]; b: Version[]; hidden: Version[]; v1: string | undefined; diff: unknown; changes: unknown; readerChanges: unknown };
  let idA: string;

  const live = (): TestServer => server as TestServer;

  async function snapshot(): Promise<typeof reference> {
    const s = live();
    return {
      a: await versions(s, adminKey, 'keep/a.md'),
      b: await versions(s, adminKey, 'keep/b.md'),
      hidden: await versions(s, adminKey, 'keep/hidden.md'),
      v1: itemOf(await ok(getAt(s, readerKey, 'keep/a.md', 'version=1'))).content,
      diff: (await ok(diff(s, readerKey, 'keep/a.md', 'from=1&to=3'))).body?.data?.diff,
      changes: (await ok(api(urlOf(s, `/changes?since=${firstCommit}`), { key: adminKey }))).body?.data,
      readerChanges: (await ok(api(urlOf(s, `/changes?since=${firstCommit}`), { key: readerKey }))).body?.data,
    };
  }

  async function restart(damage?: () => Promise<void>): Promise<void> {
    await live().close();
    server = undefined;
    if (damage) await damage();
    server = await startTestServer({ dataDir: data.dir });
    expect(server.adminKey, 'a restart prints no new admin key').to.equal('');
  }

  before(async () => {
    data = await tmpDir('ks-history');
    server = await startTestServer({ dataDir: data.dir });
    adminKey = server.adminKey;
    writerKey = await server.key('writer', 'default', 'Persistent Writer');
    readerKey = await server.key('reader');
    logFile = `${server.gitdir()}/knowledge-history.jsonl`;
    firstCommit = await head(server);
    idA = itemOf(await ok(put(server, writerKey, 'keep/a.md', { content: 'one\n' }))).id;
    await ok(put(server, writerKey, 'keep/a.md', { content: 'two\n', message: 'The second one' }));
    await ok(put(server, writerKey, 'keep/a.md', { content: 'three\n' }));
    await ok(put(server, writerKey, 'keep/b.md', { content: 'b\n' }));
    await ok(del(server, adminKey, 'keep/b.md'));
    await ok(restore(server, adminKey, 'keep/b.md'));
    await ok(put(server, adminKey, 'keep/hidden.md', { content: 'h\n', requiredReadPermission: 'knowledge:admin' }));
    await ok(put(server, adminKey, 'keep/hidden.md', { content: 'h\n', requiredReadPermission: 'knowledge:write' }));
    reference = await snapshot();
    expect(reference.a.map((v) => v.action)).to.deep.equal(['update', 'update', 'create']);
    expect(reference.b.map((v) => v.action)).to.deep.equal(['restore', 'delete', 'create']);
    expect(reference.hidden.map((v) => v.action)).to.deep.equal(['permissions', 'create']);
  });

  after(async () => {
    await server?.close();
    await data?.cleanup();
  });

  it('the same history, versions, diff and change feed after a plain restart', async () => {
    await restart();
    expect(await snapshot()).to.deep.equal(reference);
  });

  it('rebuilt when knowledge-history.jsonl is deleted before the restart', async () => {
    await readFile(logFile, 'utf8'); // it exists before it is deleted
    await restart(() => rm(logFile));
    expect(await snapshot()).to.deep.equal(reference);
    expect(await readFile(logFile, 'utf8'), 'the log is written again').to.contain(await head(live()));
  });

  it('rebuilt when the log is truncated in the middle of its last line', async () => {
    const text = await readFile(logFile, 'utf8');
    const lastLineStart = text.lastIndexOf('\n', text.length - 2) + 1;
    const cut = lastLineStart + Math.floor((text.length - lastLineStart) / 2);
    await restart(() => truncate(logFile, Buffer.byteLength(text.slice(0, cut), 'utf8')));
    expect(await snapshot()).to.deep.equal(reference);
  });

  it('rebuilt when the log is truncated in the middle of an early line', async () => {
    const text = await readFile(logFile, 'utf8');
    const lines = text.split('\n');
    expect(lines.length, 'header and several entries').to.be.greaterThan(5);
    const keep = `${lines.slice(0, 3).join('\n')}\n${(lines[3] as string).slice(0, 25)}`;
    await restart(() => writeFile(logFile, keep));
    expect(await snapshot()).to.deep.equal(reference);
  });

  it('rebuilt when the log holds garbage', async () => {
    await restart(() => writeFile(logFile, 'not a history log\n{"x":1}\n'));
    expect(await snapshot()).to.deep.equal(reference);
  });

  it('history continues after the rebuild: the next change is version 4 of the same item', async () => {
    const item = itemOf(await ok(put(live(), writerKey, 'keep/a.md', { content: 'four\n' })));
    expect(item.id).to.equal(idA);
    const vs = await versions(live(), readerKey, 'keep/a.md');
    expect(vs.map((v) => [v.version, v.action])).to.deep.equal([
      [4, 'update'],
      [3, 'update'],
      [2, 'update'],
      [1, 'create'],
    ]);
    expect(vs.slice(1)).to.deep.equal(reference.a);
    expect(vs[0]?.commitId).to.equal(await head(live()));
    // ...and it is still there after one more restart.
    await restart();
    expect(await versions(live(), readerKey, 'keep/a.md')).to.deep.equal(vs);
  });

  it('git fsck --strict is clean', async () => {
    await fsckStrict(live().gitdir());
    expect(await commitCount(live().gitdir())).to.be.greaterThan(8);
  });
});
