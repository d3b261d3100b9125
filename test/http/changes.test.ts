import { expect } from 'chai';
import { fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { head, ISO, MSG4, UNKNOWN_KEY, urlOf } from './adminApi.js';
import { del, expectError, itemOf, put } from './helpers.js';

interface Change {
  id: string;
  path: string;
  change: 'created' | 'updated' | 'deleted';
  commitId: string;
  timestamp: string;
}

function changes(server: TestServer, key: string, query: string): Promise<ApiResponse> {
  return api(urlOf(server, `/changes${query}`), { key });
}

async function feed(server: TestServer, key: string, since: string): Promise<{ head: string; changes: Change[] }> {
  const res = await changes(server, key, `?since=${since}`);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body?.success).to.equal(true);
  const data = res.body?.data as { head: string; changes: Change[] };
  expect(Object.keys(data).sort()).to.deep.equal(['changes', 'head']);
  expect(data.changes).to.be.an('array');
  for (const c of data.changes) {
    expect(Object.keys(c).sort()).to.deep.equal(['change', 'commitId', 'id', 'path', 'timestamp']);
    expect(c.timestamp).to.match(ISO);
  }
  return data;
}

/** [path, change] of each entry, in the feed's order. */
const pairs = (cs: Change[]): [string, string][] => cs.map((c) => [c.path, c.change]);

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r;
}

describe('HTTP change feed: GET /changes?since=<commit>', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;
  let other: string;
  /** The head before the changes under test. */
  let since: string;
  /** The head right after ch/new2.md was created (before its update). */
  let middle: string;
  /** The last commit that changed each path, and each item's id. */
  const last: Record<string, string> = {};
  const ids: Record<string, string> = {};
  let t0: number;
  let t1: number;

  async function step(path: string, res: Promise<ApiResponse>): Promise<void> {
    const r = await ok(res);
    if (r.body?.data?.item) ids[path] = itemOf(r).id;
    last[path] = await head(server);
  }

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await server.key('writer');
    reader = await server.key('reader');
    other = await server.org('other');
    // Before `since`: items that will be updated, deleted, or left alone.
    await step('ch/upd.md', put(server, writer, 'ch/upd.md', { content: 'u1' }));
    await step('ch/del.md', put(server, writer, 'ch/del.md', { content: 'd1' }));
    await step('ch/keep.md', put(server, writer, 'ch/keep.md', { content: 'k1' }));
    await step('ch/hidden-upd.md', put(server, admin, 'ch/hidden-upd.md', { content: 'h1', requiredReadPermission: 'knowledge:admin' }));
    since = await head(server);

    t0 = Date.now();
    await step('ch/new.md', put(server, writer, 'ch/new.md', { content: 'n1' }));
    await step('ch/new2.md', put(server, writer, 'ch/new2.md', { content: 'a' }));
    middle = await head(server);
    await step('ch/new2.md', put(server, writer, 'ch/new2.md', { content: 'b' }));
    await step('ch/upd.md', put(server, writer, 'ch/upd.md', { content: 'u2' }));
    await step('ch/del.md', del(server, admin, 'ch/del.md'));
    await step('ch/secret.md', put(server, admin, 'ch/secret.md', { content: 's', requiredReadPermission: 'knowledge:admin' }));
    await step('ch/tmp.md', put(server, writer, 'ch/tmp.md', { content: 't' }));
    await step('ch/tmp.md', del(server, admin, 'ch/tmp.md'));
    await step('ch/hidden-upd.md', put(server, admin, 'ch/hidden-upd.md', { content: 'h2' }));
    t1 = Date.now();
    // Only for the other organization: must never show up here.
    await ok(put(server, other, 'ch/theirs.md', { content: 'x' }));
  });
  after(() => server?.close());

  it('admin: created vs updated vs deleted, one entry per item, in the order of their last change', async () => {
    const data = await feed(server, admin, since);
    expect(data.head).to.equal(await head(server));
    expect(pairs(data.changes)).to.deep.equal([
      ['ch/new.md', 'created'],
      ['ch/new2.md', 'created'],
      ['ch/upd.md', 'updated'],
      ['ch/del.md', 'deleted'],
      ['ch/secret.md', 'created'],
      ['ch/tmp.md', 'deleted'],
      ['ch/hidden-upd.md', 'updated'],
    ]);
  });

  it('each entry carries the item id and the last commit that changed it, with its time', async () => {
    const data = await feed(server, admin, since);
    for (const c of data.changes) {
      expect(c.id, c.path).to.equal(ids[c.path]);
      expect(c.commitId, c.path).to.equal(last[c.path]);
      const t = Date.parse(c.timestamp);
      expect(t).to.be.at.least(Math.floor(t0 / 1000) * 1000);
      expect(t).to.be.at.most(Math.ceil(t1 / 1000) * 1000);
    }
  });

  it('reader and writer: only the items they may read', async () => {
    const expected = [
      ['ch/new.md', 'created'],
      ['ch/new2.md', 'created'],
      ['ch/upd.md', 'updated'],
      ['ch/del.md', 'deleted'],
      ['ch/tmp.md', 'deleted'],
    ];
    for (const key of [reader, writer]) {
      const data = await feed(server, key, since);
      expect(data.head).to.equal(await head(server));
      expect(pairs(data.changes)).to.deep.equal(expected);
    }
  });

  it('from a later commit: an item created before it and updated after it is "updated"', async () => {
    const data = await feed(server, reader, middle);
    expect(pairs(data.changes)).to.deep.equal([
      ['ch/new2.md', 'updated'],
      ['ch/upd.md', 'updated'],
      ['ch/del.md', 'deleted'],
      ['ch/tmp.md', 'deleted'],
    ]);
  });

  it('since=head: no changes, the same head', async () => {
    const now = await head(server);
    for (const key of [reader, writer, admin]) expect(await feed(server, key, now)).to.deep.equal({ head: now, changes: [] });
  });

  it('a commit that changed no item (a folder rule) moves head and adds no change', async () => {
    const before = await head(server);
    await ok(api(urlOf(server, '/folders/zz'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:admin' } }));
    const data = await feed(server, admin, before);
    expect(data.head).to.equal(await head(server));
    expect(data.head).to.not.equal(before);
    expect(data.changes).to.deep.equal([]);
  });

  it('a change made after a feed shows up from that feed\'s head', async () => {
    const { head: at } = await feed(server, reader, since);
    await ok(put(server, writer, 'ch/keep.md', { content: 'k2' }));
    const data = await feed(server, reader, at);
    expect(pairs(data.changes)).to.deep.equal([['ch/keep.md', 'updated']]);
    expect(data.changes[0]?.commitId).to.equal(data.head);
  });

  it('an unknown commit: 400 for every role', async () => {
    for (const key of [reader, writer, admin]) {
      expectError(await changes(server, key, `?since=${'0'.repeat(40)}`), 400);
      expectError(await changes(server, key, `?since=${'f'.repeat(40)}`), 400);
    }
  });

  it("another organization's commit: 400 (both ways)", async () => {
    expectError(await changes(server, admin, `?since=${await head(server, 'other')}`), 400);
    expectError(await changes(server, other, `?since=${since}`), 400);
    // ...while its own feed holds only its own items.
    const theirs = await head(server, 'other');
    const res = await ok(changes(server, other, `?since=${theirs}`));
    expect(res.body?.data).to.deep.equal({ head: theirs, changes: [] });
  });

  it('no since (a first call): the head to ask from next time, and no changes, for every role', async () => {
    const now = await head(server);
    for (const key of [reader, writer, admin]) {
      const res = await ok(changes(server, key, ''));
      expect(res.body?.data).to.deep.equal({ head: now, changes: [] });
    }
  });

  it('a malformed or repeated since, or another parameter: 400', async () => {
    for (const q of ['?since=', '?since=abc', `?since=${since.slice(0, 12)}`, '?since=main', '?since=HEAD', `?since=${since}&x=1`, `?since=${since}&since=${since}`]) {
      expectError(await changes(server, reader, q), 400);
    }
  });

  it('a missing or unknown key: 401', async () => {
    expectError(await api(urlOf(server, `/changes?since=${since}`)), 401, MSG4.invalidKey);
    expectError(await changes(server, UNKNOWN_KEY, `?since=${since}`), 401, MSG4.invalidKey);
    expectError(await changes(server, UNKNOWN_KEY, '?since=bad'), 401, MSG4.invalidKey);
  });

  it('wrong method: 405', async () => {
    expectError(await api(urlOf(server, `/changes?since=${since}`), { method: 'POST', key: admin, body: {} }), 405);
  });

  it('an item a reader could read at `since`, deleted and then purged: "deleted" for the reader too', async () => {
    await ok(put(server, writer, 'ch/purged.md', { content: 'soon gone' }));
    const at = await head(server);
    const id = itemOf(await ok(api(urlOf(server, '/items/ch/purged.md'), { key: reader }))).id;
    await ok(del(server, admin, 'ch/purged.md'));
    await ok(api(urlOf(server, '/trash/items/ch/purged.md'), { method: 'DELETE', key: admin }));
    const now = await head(server);
    const expected = [{ id, path: 'ch/purged.md', change: 'deleted', commitId: now }];
    const strip = (cs: Change[]) => cs.map(({ timestamp: _t, ...rest }) => rest);
    expect(strip((await feed(server, admin, at)).changes), 'admin').to.deep.equal(expected);
    // The reader's copy made at `at` holds the item: without this entry it keeps it for ever.
    expect(strip((await feed(server, reader, at)).changes), 'reader').to.deep.equal(expected);
  });

  it('an item in the trash at `since` and restored after it: "created" (a copy made at `since` lacks it)', async () => {
    await ok(put(server, writer, 'ch/back.md', { content: 'coming back' }));
    await ok(del(server, admin, 'ch/back.md'));
    const at = await head(server);
    await ok(api(urlOf(server, '/trash/restore'), { method: 'POST', key: admin, body: { path: 'ch/back.md' } }));
    await ok(put(server, writer, 'ch/back.md', { content: 'back, and edited' }));
    expect(pairs((await feed(server, reader, at)).changes)).to.deep.equal([['ch/back.md', 'created']]);
  });

  it('an item the reader could never read, deleted and purged: not in the reader\'s feed', async () => {
    await ok(put(server, admin, 'ch/secret.md', { content: 'board only', requiredReadPermission: 'knowledge:admin' }));
    const at = await head(server);
    await ok(del(server, admin, 'ch/secret.md'));
    await ok(api(urlOf(server, '/trash/items/ch/secret.md'), { method: 'DELETE', key: admin }));
    expect(pairs((await feed(server, reader, at)).changes)).to.deep.equal([]);
    expect(pairs((await feed(server, admin, at)).changes)).to.deep.equal([['ch/secret.md', 'deleted']]);
  });

  describe('what a role sees changes without an item commit', () => {
    const rule = (folder: string, body: Record<string, string>): Promise<ApiResponse> =>
      ok(api(urlOf(server, `/folders/${folder}`), { method: 'PUT', key: admin, body }));

    it('a folder rule that hides items: "deleted" for the roles it hides them from, at the rule\'s commit; nothing for admin', async () => {
      await ok(put(server, writer, 'fr/a.md', { content: 'a' }));
      await ok(put(server, writer, 'fr/sub/b.md', { content: 'b' }));
      await ok(put(server, writer, 'fr-other/c.md', { content: 'c' }));
      const at = await head(server);
      const ids = { a: itemOf(await ok(api(urlOf(server, '/items/fr/a.md'), { key: reader }))).id };
      await rule('fr', { requiredReadPermission: 'knowledge:admin' });
      const ruleCommit = await head(server);
      for (const key of [reader, writer]) {
        const data = await feed(server, key, at);
        expect(pairs(data.changes)).to.deep.equal([
          ['fr/a.md', 'deleted'],
          ['fr/sub/b.md', 'deleted'],
        ]);
        expect(data.changes[0]?.id).to.equal(ids.a);
        expect(data.changes.map((c) => c.commitId)).to.deep.equal([ruleCommit, ruleCommit]);
      }
      expect((await feed(server, admin, at)).changes).to.deep.equal([]);

      // Lifted again: from the hidden state, the items come back as "created"; from before both, nothing happened.
      await rule('fr', { requiredReadPermission: 'inherit' });
      expect(pairs((await feed(server, reader, ruleCommit)).changes)).to.deep.equal([
        ['fr/a.md', 'created'],
        ['fr/sub/b.md', 'created'],
      ]);
      expect((await feed(server, reader, at)).changes).to.deep.equal([]);
    });

    it('a nested rule: each item is reported once, under the nearest rule that changed', async () => {
      await ok(put(server, writer, 'nr/x/y.md', { content: 'y' }));
      const at = await head(server);
      await rule('nr', { requiredReadPermission: 'knowledge:admin' });
      await rule('nr/x', { requiredReadPermission: 'knowledge:read' });
      // The nearer rule lets the reader read nr/x/y.md all along: no change.
      expect((await feed(server, reader, at)).changes).to.deep.equal([]);
      await rule('nr/x', { requiredReadPermission: 'inherit' });
      const hiding = await head(server);
      const data = await feed(server, reader, at);
      expect(pairs(data.changes)).to.deep.equal([['nr/x/y.md', 'deleted']]);
      expect(data.changes[0]?.commitId).to.equal(hiding);
    });

    it('an item whose own read permission is raised: "deleted" for the reader; lowered again: "created"', async () => {
      await ok(put(server, writer, 'perm/p.md', { content: 'p' }));
      const at = await head(server);
      await ok(put(server, admin, 'perm/p.md', { content: 'p', requiredReadPermission: 'knowledge:admin' }));
      const raised = await head(server);
      expect(pairs((await feed(server, reader, at)).changes)).to.deep.equal([['perm/p.md', 'deleted']]);
      expect(pairs((await feed(server, admin, at)).changes)).to.deep.equal([['perm/p.md', 'updated']]);
      await ok(put(server, admin, 'perm/p.md', { content: 'p2', requiredReadPermission: 'inherit' }));
      expect(pairs((await feed(server, reader, raised)).changes)).to.deep.equal([['perm/p.md', 'created']]);
      expect(pairs((await feed(server, reader, at)).changes)).to.deep.equal([['perm/p.md', 'updated']]);
    });

    it('an item hidden by a rule at `since`, edited while hidden, then revealed: "created" for the reader', async () => {
      await rule('hid', { requiredReadPermission: 'knowledge:admin' });
      await ok(put(server, admin, 'hid/h.md', { content: 'h1' }));
      const at = await head(server);
      await ok(put(server, admin, 'hid/h.md', { content: 'h2' }));
      expect((await feed(server, reader, at)).changes).to.deep.equal([]);
      await rule('hid', { requiredReadPermission: 'inherit' });
      expect(pairs((await feed(server, reader, at)).changes)).to.deep.equal([['hid/h.md', 'created']]);
      expect(pairs((await feed(server, admin, at)).changes)).to.deep.equal([['hid/h.md', 'updated']]);
    });
  });

  it('git fsck --strict is clean on both organizations', async () => {
    await fsckStrict(server.gitdir());
    await fsckStrict(server.gitdir('other'));
  });
});
