import { expect } from 'chai';
import git from 'isomorphic-git';
import type { Volume } from 'memfs';
import { silentLogger } from '../../../src/common/log.js';
import { parseTrailers } from '../../../src/storage/repo/commitMessage.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import type { IndexEntry } from '../../../src/storage/repo/itemIndex.js';
import { LAYOUT, serializeRecord } from '../../../src/storage/repo/itemRecord.js';
import { blobObject } from '../../../src/storage/git/objectFormat.js';
import { OrgRepo, type WriteResult } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { readRef } from '../../../src/storage/git/refs.js';
import { gitOrder, lookup, readObject, readRawTree } from '../../support/gitObjects.js';
import { memoryFs } from '../../support/memfs.js';
import { moveIntent, putIntent } from '../../support/intents.js';
import { rejection } from '../../support/records.js';
import { hostGit } from '../../support/git.js';

/**
 * The commit builder and write queue on memfs:
 * an organization created by OrgStore, then transactions through OrgRepo.write.
 */

const DATA = '/data';
const ORG = 'acme';
const GITDIR = `${DATA}/orgs/${ORG}.git`;
describe('storage/orgRepo (memfs)', () => {
  let vol: Volume;
  let fs: FsPromises;
  let repo: OrgRepo;

  const put = (path: string, content: string): Promise<WriteResult> => repo.write((v) => putIntent(v, path, content));
  const headTree = async (): Promise<string> => {
    const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: repo.headCommit as string });
    return commit.tree;
  };
  const commitCount = async (): Promise<number> =>
    (await git.log({ fs: { promises: fs }, gitdir: GITDIR, ref: 'refs/heads/main' })).length;

  beforeEach(async () => {
    ({ vol, fs } = memoryFs());
    await new OrgStore({ git: hostGit, fs, dataDir: DATA, logger: silentLogger }).create(ORG, new Date('2024-03-01T09:00:00Z'));
    repo = await OrgRepo.open({ orgId: ORG, fs, gitdir: GITDIR, logger: silentLogger });
  });

  afterEach(async () => {
    await repo.close();
  });

  describe('a new organization', () => {
    it('has one commit holding only the store marker, on main, and no items', async () => {
      expect(repo.itemCount).to.equal(0);
      expect(repo.headCommit).to.match(/^[0-9a-f]{40}$/);
      expect(await readRef(fs, GITDIR)).to.equal(repo.headCommit);
      expect(vol.readFileSync(`${GITDIR}/HEAD`, 'utf8')).to.equal('ref: refs/heads/main\n');
      expect(await commitCount()).to.equal(1);
      const root = await readRawTree(fs, GITDIR, await headTree());
      expect(root.map((e) => e.name)).to.deep.equal(['.knowledge']);
      const config = await lookup(fs, GITDIR, await headTree(), LAYOUT.configPath);
      const text = (await readObject(fs, GITDIR, config?.oid as string)).body.toString('utf8');
      expect(JSON.parse(text)).to.deep.equal({ format: 'knowledge-store', version: 1 });
      // No temporary build directory is left beside the repository.
      expect(vol.readdirSync(`${DATA}/orgs`)).to.deep.equal([`${ORG}.git`]);
    });
  });

  describe('write transactions', () => {
    it('makes one commit per accepted transaction with content and record in the same commit', async () => {
      const before = repo.headCommit;
      const result = await put('docs/guide.md', '# Guide\n');
      expect(result.commitId).to.match(/^[0-9a-f]{40}$/);
      expect(repo.headCommit).to.equal(result.commitId);
      expect(await readRef(fs, GITDIR)).to.equal(result.commitId);
      expect(await commitCount()).to.equal(2);

      const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: result.commitId as string });
      expect(commit.parent).to.deep.equal([before]);
      expect(commit.author).to.deep.include({ name: 'ci bot', email: 'key_0123456789abcdef', timestamp: 1709287200, timezoneOffset: 0 });
      expect(commit.committer.timestamp).to.equal(1709287200); // whole seconds: the .750 is dropped
      const entry = result.entry as IndexEntry;
      expect(parseTrailers(commit.message)).to.deep.equal({ itemId: entry.record.id, itemPath: 'docs/guide.md', action: 'create' });
      expect(commit.message.startsWith('Create docs/guide.md\n\n')).to.equal(true);

      const tree = commit.tree;
      expect((await lookup(fs, GITDIR, tree, 'docs/guide.md'))?.oid).to.equal(entry.blobOid);
      expect((await lookup(fs, GITDIR, tree, '.knowledge/items/docs/guide.md'))?.oid).to.equal(entry.recordOid);
      expect((await readObject(fs, GITDIR, entry.blobOid)).body.toString('utf8')).to.equal('# Guide\n');
      expect((await readObject(fs, GITDIR, entry.recordOid)).body.toString('utf8')).to.equal(serializeRecord(entry.record));
      expect(entry.blobOid).to.equal(blobObject(Buffer.from('# Guide\n')).oid);
      expect(repo.get('docs/guide.md')).to.deep.equal(entry);
      expect(await repo.readContent(entry)).to.equal('# Guide\n');
    });

    it('rewrites only the trees on the changed path; sibling subtrees keep their ids', async () => {
      await put('docs/guide.md', 'g');
      await put('docs/api/ref.md', 'r');
      await put('notes/todo.md', 't');
      await put('readme.md', 'hello');
      const before = await headTree();
      await put('docs/api/ref.md', 'r2');
      const after = await headTree();
      for (const same of ['notes', 'readme.md', 'docs/guide.md', '.knowledge/config.json', '.knowledge/items/notes', '.knowledge/items/docs/guide.md']) {
        expect((await lookup(fs, GITDIR, after, same))?.oid, same).to.equal((await lookup(fs, GITDIR, before, same))?.oid);
      }
      for (const changed of ['docs', 'docs/api', 'docs/api/ref.md', '.knowledge', '.knowledge/items', '.knowledge/items/docs']) {
        expect((await lookup(fs, GITDIR, after, changed))?.oid, changed).not.to.equal((await lookup(fs, GITDIR, before, changed))?.oid);
      }
    });

    it('stores every tree in git order (a-b.md, a.md, a/, a0.md)', async () => {
      for (const path of ['a0.md', 'a/x.md', 'a.md', 'a-b.md', 'a_c.md']) await put(path, path);
      const root = await headTree();
      const check = async (oid: string, where: string): Promise<void> => {
        const entries = await readRawTree(fs, GITDIR, oid);
        expect(entries.map((e) => e.name), where).to.deep.equal(gitOrder(entries));
        for (const e of entries) if (e.mode === '40000') await check(e.oid, `${where}${e.name}/`);
      };
      await check(root, '/');
      expect((await readRawTree(fs, GITDIR, root)).map((e) => e.name)).to.deep.equal(['.knowledge', 'a-b.md', 'a.md', 'a', 'a0.md', 'a_c.md']);
      const records = await lookup(fs, GITDIR, root, '.knowledge/items');
      expect((await readRawTree(fs, GITDIR, records?.oid as string)).map((e) => e.name)).to.deep.equal(['a-b.md', 'a.md', 'a', 'a0.md', 'a_c.md']);
    });

    it('moves deleted content under .trash/, removing the emptied folder, and purge clears both', async () => {
      await put('docs/only.md', 'only');
      await put('keep.md', 'keep');
      const keepTree = await lookup(fs, GITDIR, await headTree(), 'keep.md');
      await repo.write((v) => moveIntent(v, 'docs/only.md', 'trash'));
      let root = await headTree();
      expect((await readRawTree(fs, GITDIR, root)).map((e) => e.name)).to.deep.equal(['.knowledge', '.trash', 'keep.md']);
      expect((await lookup(fs, GITDIR, root, '.trash/docs/only.md'))?.oid).to.equal(blobObject(Buffer.from('only')).oid);
      expect(await lookup(fs, GITDIR, root, '.knowledge/items/docs/only.md')).not.to.equal(undefined);
      expect(repo.get('docs/only.md')?.record.deletedAt).to.equal('2024-03-02T00:00:00.000Z');
      expect((await lookup(fs, GITDIR, root, 'keep.md'))?.oid).to.equal(keepTree?.oid);

      await repo.write((v) => moveIntent(v, 'docs/only.md', 'restore'));
      root = await headTree();
      expect((await readRawTree(fs, GITDIR, root)).map((e) => e.name)).to.deep.equal(['.knowledge', 'docs', 'keep.md']);
      expect(repo.get('docs/only.md')?.record.deletedAt).to.equal(null);

      await repo.write((v) => moveIntent(v, 'docs/only.md', 'trash'));
      await repo.write((v) => moveIntent(v, 'docs/only.md', 'purge'));
      root = await headTree();
      expect((await readRawTree(fs, GITDIR, root)).map((e) => e.name)).to.deep.equal(['.knowledge', 'keep.md']);
      const items = await lookup(fs, GITDIR, root, '.knowledge/items');
      expect((await readRawTree(fs, GITDIR, items?.oid as string)).map((e) => e.name)).to.deep.equal(['keep.md']);
      expect(repo.get('docs/only.md')).to.equal(undefined);
      expect(repo.itemCount).to.equal(1);
    });

    it('makes no commit for a transaction that returns null', async () => {
      const first = await put('a.md', 'same');
      const head = repo.headCommit;
      let matched: boolean | undefined;
      const result = await repo.write((v) => {
        const current = v.get('a.md') as IndexEntry;
        matched = v.contentMatches(current, 'same');
        return matched ? null : putIntent(v, 'a.md', 'same');
      });
      expect(matched).to.equal(true);
      expect(result).to.deep.equal({ commitId: null, entry: null });
      expect(repo.headCommit).to.equal(head);
      expect(await readRef(fs, GITDIR)).to.equal(head);
      expect(await commitCount()).to.equal(2);
      expect(repo.get('a.md')).to.deep.equal(first.entry);
    });

    it('reports different content as not matching', async () => {
      await put('a.md', 'one');
      let matched: boolean | undefined;
      await repo.write((v) => {
        matched = v.contentMatches(v.get('a.md') as IndexEntry, 'one ');
        return null;
      });
      expect(matched).to.equal(false);
    });

    it('a transaction that throws changes nothing and the error reaches its caller', async () => {
      await put('a.md', 'a');
      const head = repo.headCommit;
      const err = await rejection(
        repo.write(() => {
          throw new Error('refused by the domain');
        }),
      );
      expect(String(err)).to.include('refused by the domain');
      expect(repo.headCommit).to.equal(head);
      expect(await commitCount()).to.equal(2);
    });
  });

  describe('a batch of queued transactions', () => {
    it('commits the others when one throws; each later one sees the earlier ones', async () => {
      const seen: Array<string | undefined> = [];
      // The first write starts a queue turn at once; the next four queue behind it and run as one batch.
      const p0 = put('zero.md', '0');
      const p1 = put('docs/one.md', '1');
      const p2 = repo.write((v) => {
        seen.push(v.get('docs/one.md')?.record.path);
        throw new Error('middle one refuses');
      });
      const p3 = repo.write((v) => {
        seen.push(v.get('docs/one.md')?.record.path);
        seen.push(String(v.hasEntriesUnder('docs')));
        return putIntent(v, 'docs/three.md', '3');
      });
      const p4 = repo.write((v) => putIntent(v, 'docs/one.md', '1, updated'));
      const [r0, r1, e2, r3, r4] = await Promise.all([p0, p1, rejection(p2), p3, p4]);
      expect(String(e2)).to.include('middle one refuses');
      expect(seen).to.deep.equal(['docs/one.md', 'docs/one.md', 'true']);

      // A chain of four commits, each the parent of the next.
      const chain = [r0, r1, r3, r4].map((r) => r.commitId as string);
      expect(new Set(chain).size).to.equal(4);
      for (let i = 1; i < chain.length; i++) {
        const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: chain[i] as string });
        expect(commit.parent).to.deep.equal([chain[i - 1]]);
      }
      expect(repo.headCommit).to.equal(chain[3]);
      expect(await commitCount()).to.equal(5);
      expect(await repo.readContent(repo.get('docs/one.md') as IndexEntry)).to.equal('1, updated');
      expect(repo.get('docs/three.md')?.blobOid).to.equal(blobObject(Buffer.from('3')).oid);
      expect(r4.entry?.record.id).to.equal(r1.entry?.record.id);
      const { commit: last } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: chain[3] as string });
      expect(parseTrailers(last.message)?.action).to.equal('update');
    });

    it('lets a later transaction see a delete earlier in the same batch (folder count)', async () => {
      await put('solo/a.md', 'a');
      let seen: boolean | undefined;
      const p1 = put('other.md', 'x'); // starts a turn
      const p2 = repo.write((v) => moveIntent(v, 'solo/a.md', 'trash'));
      const p3 = repo.write((v) => moveIntent(v, 'solo/a.md', 'purge'));
      const p4 = repo.write((v) => {
        seen = v.hasEntriesUnder('solo');
        return null;
      });
      await Promise.all([p1, p2, p3, p4]);
      expect(seen).to.equal(false);
      expect(await lookup(fs, GITDIR, await headTree(), 'solo')).to.equal(undefined);
    });
  });

  describe('the pipeline (the next batch is built while the one before is being flushed)', () => {
    it('builds the next batch on the one in flight, and publishes both in order', async () => {
      const first = put('pipe/a.md', 'a');
      let sawFirst = false;
      const second = repo.write((v) => {
        sawFirst = v.get('pipe/a.md') !== undefined;
        return putIntent(v, 'pipe/b.md', 'b');
      });
      const [a, b] = await Promise.all([first, second]);
      expect(sawFirst, 'the second batch saw the first, before it was durable').to.equal(true);
      const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: b.commitId as string });
      expect(commit.parent).to.deep.equal([a.commitId]);
      expect(await readRef(fs, GITDIR)).to.equal(b.commitId);
    });

    it('when a flush fails, the batch built on it fails too and nothing of either is published', async () => {
      const before = repo.headCommit;
      await repo.close();
      let failNext = true;
      const failing = Object.create(fs) as FsPromises;
      failing.rename = async (from: string, to: string) => {
        if (failNext && to.endsWith('.pack')) {
          failNext = false;
          throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        }
        return fs.rename(from, to);
      };
      repo = await OrgRepo.open({ orgId: ORG, fs: failing, gitdir: GITDIR, logger: silentLogger });
      let sawFirst = false;
      const first = put('fail/a.md', 'a');
      const second = repo.write((v) => {
        sawFirst = v.get('fail/a.md') !== undefined;
        return putIntent(v, 'fail/b.md', 'b');
      });
      const errors = await Promise.all([rejection(first), rejection(second)]);
      expect(sawFirst).to.equal(true);
      expect(String(errors[0])).to.match(/EIO/);
      expect(String(errors[1])).to.match(/EIO|earlier commit/);
      expect(repo.headCommit).to.equal(before);
      expect(await readRef(fs, GITDIR)).to.equal(before);
      expect(repo.get('fail/a.md')).to.equal(undefined);
      expect(repo.get('fail/b.md')).to.equal(undefined);
      // The next write goes on from the durable state.
      const retry = await put('fail/b.md', 'b');
      const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: retry.commitId as string });
      expect(commit.parent).to.deep.equal([before]);
    });
  });

  describe('when the ref moved under it', () => {
    it('refuses the batch (RefConflict), publishes nothing, reloads, and writes on top of what is there', async () => {
      const initial = repo.headCommit as string;
      await put('a.md', 'a');
      // Someone else (not through OrgRepo) puts main back to the first commit.
      vol.writeFileSync(`${GITDIR}/refs/heads/main`, `${initial}\n`);
      const err = await rejection(put('b.md', 'b'));
      expect((err as { code?: string }).code).to.equal('REF_CONFLICT');
      expect(await readRef(fs, GITDIR)).to.equal(initial);
      // The reload runs after the callers are answered, ahead of any later write in the queue.
      const next = await put('c.md', 'c');
      expect(repo.get('a.md')).to.equal(undefined);
      expect(repo.get('b.md')).to.equal(undefined);
      const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: next.commitId as string });
      expect(commit.parent).to.deep.equal([initial]);
      expect([...repo.entries()].map((e) => e.record.path)).to.deep.equal(['c.md']);
    });
  });

  describe('reopening', () => {
    it('rebuilds the same index from the head tree', async () => {
      await put('docs/guide.md', 'g');
      await put('docs/api/ref.md', 'r');
      await put('a.md', 'a');
      await put('docs/guide.md', 'g2');
      await repo.write((v) => moveIntent(v, 'a.md', 'trash'));
      const before = [...repo.entries()];
      const reopened = await OrgRepo.open({ orgId: ORG, fs, gitdir: GITDIR, logger: silentLogger });
      expect(reopened.headCommit).to.equal(repo.headCommit);
      expect(reopened.itemCount).to.equal(3);
      expect([...reopened.entries()]).to.deep.equal(before);
      expect([...reopened.entries({ prefix: 'docs/' })].map((e) => e.record.path)).to.deep.equal(['docs/api/ref.md', 'docs/guide.md']);
      expect(reopened.get('a.md')?.record.deletedAt).not.to.equal(null);
      expect(await reopened.readContent(reopened.get('docs/guide.md') as IndexEntry)).to.equal('g2');
      // And it keeps writing on top of the same history.
      const next = await reopened.write((v) => putIntent(v, 'docs/guide.md', 'g3'));
      const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: next.commitId as string });
      expect(commit.parent).to.deep.equal([repo.headCommit]);
      await reopened.close();
    });
  });

  it('runs a write queued just as the queue drains (no lost wake-up)', async () => {
    // The previous drain cleared its flag a few microtasks after its last look at the queue;
    // a write queued in that gap waited for ever. Each number of ticks probes another moment.
    for (let ticks = 0; ticks < 6; ticks++) {
      await repo.write((v) => putIntent(v, `gap/a${ticks}.md`, 'a'));
      for (let i = 0; i < ticks; i++) await null;
      const late = repo.write((v) => putIntent(v, `gap/b${ticks}.md`, 'b'));
      const settled = await Promise.race([late.then(() => true), new Promise((r) => setTimeout(() => r(false), 2000))]);
      expect(settled, `write queued after ${ticks} ticks`).to.equal(true);
    }
  });

  describe('closing', () => {
    it('refuses writes after close', async () => {
      await repo.close();
      const err = await rejection(put('a.md', 'a'));
      expect(String(err)).to.match(/closed/);
    });
  });

  it('works on a plain memfs volume', async () => {
    // memfs refuses writes through a handle created 0444 (Linux allows them); objects must still land.
    const plain = memoryFs();
    await new OrgStore({ git: hostGit, fs: plain.fs, dataDir: DATA, logger: silentLogger }).create(ORG, new Date());
    const r = await OrgRepo.open({ orgId: ORG, fs: plain.fs, gitdir: GITDIR, logger: silentLogger });
    const result = await r.write((v) => putIntent(v, 'a.md', 'a'));
    expect(result.commitId).to.match(/^[0-9a-f]{40}$/);
    await r.close();
  });
});
