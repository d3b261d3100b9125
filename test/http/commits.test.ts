import { expect } from 'chai';
import { ensureBuilt, runCli } from '../support/child.js';
import { fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { gitOk } from '../git/support.js';
import { COMMIT, head, keyWithId, urlOf, versions } from './adminApi.js';
import { get, itemOf, MSG, put, type Item } from './helpers.js';

/** POST /commits: several operations, all-or-nothing, one commit; a refusal names its operation and changes nothing. */

type Op = Record<string, unknown>;

function commit(server: TestServer, key: string, operations: unknown, message?: string): Promise<ApiResponse> {
  return api(urlOf(server, '/commits'), { method: 'POST', key, body: message === undefined ? { operations } : { message, operations } });
}

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  expect(r.body?.success).to.equal(true);
  return r;
}

interface Result {
  op: string;
  item?: Item;
  etag?: string;
  changed?: boolean;
  path?: string;
  deleted?: boolean;
}

const dataOf = (r: ApiResponse): { commitId: string | null; items: Result[] } => r.body?.data as { commitId: string | null; items: Result[] };

/** The refusal: status, exact message, the failed operation's index, and main exactly where it was. */
async function refused(server: TestServer, key: string, operations: unknown, status: number, message: string | RegExp, failedOperation?: number): Promise<void> {
  const before = await head(server);
  const r = await commit(server, key, operations);
  expect(r.status, JSON.stringify(r.body)).to.equal(status);
  expect(r.body?.success).to.equal(false);
  if (typeof message === 'string') expect(r.body?.error).to.equal(message);
  else expect(r.body?.error).to.match(message);
  if (failedOperation === undefined) expect(r.body).to.not.have.property('data');
  else expect(r.body?.data).to.deep.equal({ failedOperation });
  expect(await head(server), 'main after a refused commit').to.equal(before);
}

describe('HTTP commits: POST /commits', function () {
  this.timeout(120_000);

  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = (await keyWithId(server, 'writer', 'Walt Writer')).secret;
    reader = await server.key('reader');
    await ok(put(server, admin, 'c/old.md', { content: 'old\n' }));
    await ok(put(server, admin, 'c/gone.md', { content: 'to be deleted\n' }));
    await ok(put(server, admin, 'c/keep.md', { content: 'kept\n' }));
    await ok(put(server, admin, 'secret/plan.md', { content: 'hidden\n', requiredReadPermission: 'knowledge:admin' }));
  });

  after(async () => {
    await server?.close();
  });

  describe('a commit of mixed operations', () => {
    let start: string;
    let result: { commitId: string | null; items: Result[] };
    let old: Item;

    before(async () => {
      old = itemOf(await get(server, admin, 'c/old.md'));
      start = await head(server);
      const r = await ok(
        commit(
          server,
          admin,
          [
            { op: 'put', path: 'c/new.md', content: 'a brand new zebrafish note\n' },
            { op: 'put', path: 'c/old.md', content: 'old, edited\n', ifMatch: (await get(server, admin, 'c/old.md')).headers.get('etag') },
            { op: 'move', from: 'c/old.md', to: 'd/old.md' },
            { op: 'delete', path: 'c/gone.md' },
            { op: 'put', path: 'c/keep.md', content: 'kept\n' },
            { op: 'put', path: 'c/temp.md', content: 'created and moved\n' },
            { op: 'move', from: 'c/temp.md', to: 'd/temp.md' },
          ],
          'Reorganise c/',
        ),
      );
      result = dataOf(r);
    });

    it('is one commit on main holding every change (C git log --name-status)', async () => {
      expect(result.commitId).to.match(COMMIT);
      expect(await head(server)).to.equal(result.commitId);
      expect((await gitOk(['rev-list', '--count', `${start}..main`], { gitdir: server.gitdir() })).trim()).to.equal('1');
      const log = await gitOk(['log', '-1', '--name-status', '--no-renames', '--format=%s', 'main'], { gitdir: server.gitdir() });
      const lines = log.trim().split('\n');
      expect(lines[0]).to.equal('Reorganise c/');
      const changes = lines.slice(1).filter((l) => l !== '').sort();
      expect(changes).to.include.members([
        'A\tc/new.md',
        'D\tc/old.md',
        'A\td/old.md',
        'D\tc/gone.md',
        'A\t.trash/c/gone.md',
        'A\td/temp.md',
      ]);
      // Unchanged and never-committed paths are not in it.
      expect(changes.join('\n')).to.not.contain('c/keep.md');
      expect(changes.join('\n')).to.not.contain('c/temp.md');
      await fsckStrict(server.gitdir());
    });

    it('names every item in one trailer paragraph that git log shows as a list', async () => {
      const body = await gitOk(['log', '-1', '--format=%B', 'main'], { gitdir: server.gitdir() });
      const trailers = body.trim().split('\n\n').at(-1)?.split('\n') ?? [];
      // c/keep.md did not change; c/temp.md was created and moved: one group, a create where it ended.
      expect(trailers.filter((l) => l.startsWith('Item-Id: '))).to.have.length(4);
      expect(trailers).to.include.members(['Item-Path: c/new.md', 'Item-Action: create', 'Item-Path: d/old.md', 'Item-From-Path: c/old.md', 'Item-Path: c/gone.md', 'Item-Action: delete']);
    });

    it('answers each operation in order: items without content, with their ETag; deletes by path', async () => {
      expect(result.items.map((i) => i.op)).to.deep.equal(['put', 'put', 'move', 'delete', 'put', 'put', 'move']);
      expect(result.items.map((i) => i.item?.path ?? i.path)).to.deep.equal(['c/new.md', 'c/old.md', 'd/old.md', 'c/gone.md', 'c/keep.md', 'c/temp.md', 'd/temp.md']);
      expect(result.items.map((i) => i.changed)).to.deep.equal([true, true, undefined, undefined, false, true, undefined]);
      expect(result.items[3]).to.deep.equal({ op: 'delete', path: 'c/gone.md', deleted: true });
      expect(result.items[0]?.item).to.not.have.property('content');
      const moved = await get(server, admin, 'd/old.md');
      expect(itemOf(moved).content).to.equal('old, edited\n');
      expect(itemOf(moved).id).to.equal(old.id);
      expect(moved.headers.get('etag')).to.equal(result.items[2]?.etag);
      expect((await get(server, admin, 'c/old.md')).status).to.equal(404);
      expect((await get(server, admin, 'c/gone.md')).status).to.equal(404);
      expect((await get(server, admin, 'c/temp.md')).status).to.equal(404);
      expect(itemOf(await get(server, admin, 'd/temp.md')).content).to.equal('created and moved\n');
    });

    it('shows in the history of each item it changed', async () => {
      const movedVersions = await versions(server, admin, 'd/old.md');
      expect(movedVersions[0]).to.include({ commitId: result.commitId, action: 'move', message: 'Reorganise c/' });
      expect(movedVersions).to.have.length(2);
      expect((await versions(server, admin, 'c/new.md'))[0]).to.include({ commitId: result.commitId, action: 'create' });
      expect(await versions(server, admin, 'd/temp.md')).to.have.length(1);
      expect((await versions(server, admin, 'c/keep.md'))[0]?.commitId).to.not.equal(result.commitId);
    });

    it('is in the change feed: one entry per item', async () => {
      const r = await ok(api(urlOf(server, `/changes?since=${start}`), { key: admin }));
      const changes = (r.body?.data as { changes: Array<{ path: string; change: string; commitId: string }> }).changes;
      const seen = changes.map((c) => `${c.change} ${c.path}`).sort();
      expect(seen).to.deep.equal(['created c/new.md', 'created d/old.md', 'created d/temp.md', 'deleted c/gone.md', 'deleted c/old.md']);
      expect(changes.every((c) => c.commitId === result.commitId)).to.equal(true);
    });

    it('is found by search at once, and no longer where it left', async () => {
      const r = await ok(api(urlOf(server, '/search?q=zebrafish'), { key: admin }));
      expect((r.body?.data as { results: Array<{ path: string }> }).results.map((x) => x.path)).to.deep.equal(['c/new.md']);
      const edited = await ok(api(urlOf(server, '/search?q=edited'), { key: admin }));
      expect((edited.body?.data as { results: Array<{ path: string }> }).results.map((x) => x.path)).to.deep.equal(['d/old.md']);
    });
  });

  it('changes nothing when nothing changes: commitId null', async () => {
    const before = await head(server);
    const r = await ok(commit(server, admin, [{ op: 'put', path: 'c/keep.md', content: 'kept\n' }]));
    expect(dataOf(r).commitId).to.equal(null);
    expect(dataOf(r).items[0]?.changed).to.equal(false);
    expect(await head(server)).to.equal(before);
  });

  it('a writer commits puts and moves; the default message says what it did', async () => {
    const r = await ok(
      commit(server, writer, [
        { op: 'put', path: 'w/a.md', content: 'a' },
        { op: 'put', path: 'w/b.md', content: 'b' },
      ]),
    );
    const subject = await gitOk(['log', '-1', '--format=%s%n%an', 'main'], { gitdir: server.gitdir() });
    expect(subject.trim()).to.equal('Create 2 (2 changes in one commit)\nWalt Writer');
    expect(dataOf(r).commitId).to.equal(await head(server));
  });

  describe('per-operation ifMatch', () => {
    it('passes with the ETag GET gives, and refuses a stale one (412, that operation)', async () => {
      const etag = (await get(server, admin, 'c/keep.md')).headers.get('etag') as string;
      await ok(commit(server, admin, [{ op: 'put', path: 'c/keep.md', content: 'kept v2\n', ifMatch: etag }]));
      await refused(server, admin, [{ op: 'put', path: 'w/ok.md', content: 'x' }, { op: 'put', path: 'c/keep.md', content: 'v3', ifMatch: etag }], 412, MSG.changed, 1);
      await refused(server, admin, [{ op: 'move', from: 'c/keep.md', to: 'c/kept.md', ifMatch: etag }], 412, MSG.changed, 0);
      await refused(server, admin, [{ op: 'put', path: 'w/none.md', content: 'x', ifMatch: etag }], 412, MSG.changed, 0);
    });
  });

  describe('refusals: the operation\'s own status and message, its index, and no commit', () => {
    it('a reader may not commit (403, before any operation)', async () => {
      await refused(server, reader, [{ op: 'put', path: 'r/a.md', content: 'x' }], 403, MSG.forbiddenWrite);
    });

    it('a writer may not delete, nor set permissions', async () => {
      await refused(server, writer, [{ op: 'put', path: 'w/c.md', content: 'c' }, { op: 'delete', path: 'w/a.md' }], 403, MSG.forbiddenAdmin, 1);
      await refused(server, writer, [{ op: 'put', path: 'w/c.md', content: 'c', requiredReadPermission: 'knowledge:admin' }], 403, MSG.forbiddenAdmin, 0);
    });

    it('an item the role may not read: 404 for a move or delete of it, "taken" for a put there', async () => {
      await refused(server, writer, [{ op: 'put', path: 'w/c.md', content: 'c' }, { op: 'move', from: 'secret/plan.md', to: 'w/plan.md' }], 404, MSG.notFound, 1);
      await refused(server, writer, [{ op: 'put', path: 'secret/plan.md', content: 'mine' }], 409, 'Path conflict: "secret/plan.md" is taken', 0);
      await refused(server, admin, [{ op: 'delete', path: 'nothing/here.md' }], 404, MSG.notFound, 0);
    });

    it('path rules, conflicts and the trash, as the single routes answer them', async () => {
      await refused(server, admin, [{ op: 'put', path: 'ok.md', content: 'x' }, { op: 'put', path: 'Bad.md', content: 'x' }], 400, /^Invalid path: /, 1);
      await refused(server, admin, [{ op: 'move', from: 'w/a.md', to: 'w/a.md' }], 400, 'from and to are the same path: nothing to move', 0);
      await refused(server, admin, [{ op: 'move', from: 'w/a.md', to: 'w/b.md' }], 409, 'Path conflict: "w/b.md" is taken', 0);
      await refused(server, admin, [{ op: 'put', path: 'w/a.md/x.md', content: 'x' }], 409, 'Path conflict: "w/a.md" is an item, not a folder', 0);
      await refused(server, admin, [{ op: 'put', path: 'c/gone.md', content: 'x' }], 409, MSG.inTrash, 0);
      await refused(server, admin, [{ op: 'move', from: 'c/gone.md', to: 'c/back.md' }], 409, MSG.inTrash, 0);
    });

    it('an operation sees the ones before it: a second move of a moved item is a duplicate; a folder where an item moved away works', async () => {
      await ok(commit(server, admin, [{ op: 'put', path: 'x/one.md', content: '1' }]));
      // A later operation finds what an earlier one left: the item moved away is not at x/one.md any more.
      await refused(server, admin, [{ op: 'move', from: 'x/one.md', to: 'x/two.md' }, { op: 'move', from: 'x/one.md', to: 'x/three.md' }], 400, /^operations 0 and 1 both change "x\/one\.md"/, 1);
      const r = await ok(commit(server, admin, [{ op: 'move', from: 'x/one.md', to: 'x/two.md' }, { op: 'put', path: 'x/one.md/sub.md', content: 'now a folder' }]));
      expect(dataOf(r).items.map((i) => i.item?.path)).to.deep.equal(['x/two.md', 'x/one.md/sub.md']);
    });

    it('duplicate paths: 400 naming both operations', async () => {
      await refused(server, admin, [{ op: 'put', path: 'dup.md', content: '1' }, { op: 'put', path: 'k.md', content: 'k' }, { op: 'put', path: 'dup.md', content: '2' }], 400, 'operations 0 and 2 both change "dup.md": put each path once per commit, or move it after a put', 2);
      await refused(server, admin, [{ op: 'put', path: 'w/a.md', content: '1' }, { op: 'delete', path: 'w/a.md' }], 400, /^operations 0 and 1 both change "w\/a\.md"/, 1);
      await refused(server, admin, [{ op: 'move', from: 'w/a.md', to: 'w/z.md' }, { op: 'put', path: 'w/z.md', content: 'x' }], 400, /^operations 0 and 1 both change "w\/z\.md"/, 1);
    });

    it('0 and 1001 operations, a bad operation and a bad body: 400', async () => {
      await refused(server, admin, [], 400, 'operations must hold 1 to 1000 operations');
      const many: Op[] = Array.from({ length: 1001 }, (_, i) => ({ op: 'put', path: `many/${i}.md`, content: 'x' }));
      await refused(server, admin, many, 400, 'operations must hold 1 to 1000 operations');
      await refused(server, admin, [{ op: 'put', path: 'a.md' }], 400, 'content is required', 0);
      await refused(server, admin, [{ op: 'put', path: 'a.md', content: 'x' }, { op: 'copy', path: 'a.md' }], 400, /^operations\/1\/op must be one of/);
      await refused(server, admin, [{ op: 'delete', path: 'a.md', content: 'x' }], 400, 'Unknown field "content"', 0);
      await refused(server, admin, [{ op: 'move', from: 'w/a.md', to: 'w/y.md', ifMatch: '' }], 400, /ifMatch/, 0);
      const before = await head(server);
      const r = await api(urlOf(server, '/commits'), { method: 'POST', key: admin, body: { operations: [], extra: 1 } });
      expect(r.status).to.equal(400);
      expect(r.body?.error).to.equal('Unknown field "extra"');
      expect(await head(server)).to.equal(before);
    });

    it('content over the limit is 413 for that operation', async () => {
      const big = 'x'.repeat(1_048_577);
      await refused(server, admin, [{ op: 'put', path: 'ok.md', content: 'x' }, { op: 'put', path: 'big.md', content: big }], 413, MSG.tooLarge, 1);
    });

    it('a body over eight contents\' worth is 413 before it is read whole', async () => {
      const piece = 'y'.repeat(1_000_000);
      const ops = Array.from({ length: 9 }, (_, i) => ({ op: 'put', path: `huge/${i}.md`, content: piece }));
      const before = await head(server);
      const r = await commit(server, admin, ops);
      expect(r.status).to.equal(413);
      expect(await head(server)).to.equal(before);
    });
  });
});

describe('HTTP commits: verify after commits', function () {
  this.timeout(120_000);

  it('knowledge-store verify is clean (fsck, records against the tree, the search index), and history survives a restart', async () => {
    await ensureBuilt();
    const data = await tmpDir('ks-commits-verify');
    const server = await startTestServer({ dataDir: data.dir });
    const key = server.adminKey;
    try {
      await ok(put(server, key, 'v/a.md', { content: 'a\n' }));
      await ok(
        commit(server, key, [
          { op: 'put', path: 'v/b.md', content: 'b\n' },
          { op: 'move', from: 'v/a.md', to: 'v/deep/a.md' },
          { op: 'move', from: 'v/b.md', to: 'v/c.md' },
        ]),
      );
      await Promise.all([
        ok(commit(server, key, [{ op: 'delete', path: 'v/c.md' }, { op: 'put', path: 'v/d.md', content: 'd\n' }])),
        ok(put(server, key, 'v/e.md', { content: 'in the same group commit\n' })),
      ]);
      await server.close();
      const run = await runCli(['verify', '--data-dir', data.dir]);
      expect(run.code, `${run.stdout}${run.stderr}`).to.equal(0);
      expect(run.stdout).to.match(/^default: OK \(3 items, 1 in trash, head [0-9a-f]{12}, search index in step\)$/m);
      // The history log rebuilt from the trailers alone reads the same.
      const { promises } = await import('node:fs');
      await promises.rm(`${server.gitdir()}/knowledge-history.jsonl`);
      const again = await startTestServer({ dataDir: data.dir });
      try {
        const v = await versions(again, await again.key('admin'), 'v/deep/a.md');
        expect(v.map((x) => x.action)).to.deep.equal(['move', 'create']);
      } finally {
        await again.close();
      }
    } finally {
      await server.close();
      await data.cleanup();
    }
  });
});
