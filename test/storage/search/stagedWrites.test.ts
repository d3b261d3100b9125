import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { Actor } from '../../../src/domain/keys.js';
import { putItem } from '../../../src/domain/items.js';
import { readNeed, searchItems } from '../../../src/domain/search.js';
import type { FileHandleLike, FsPromises } from '../../../src/storage/fs/fs.js';
import { readRef } from '../../../src/storage/git/refs.js';
import type { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { hostGit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The index writes a batch while the batch's ref update is fsynced (the fsync of
 * refs/heads, after the rename: see groupCommit.ts), in a transaction it commits
 * only once the branch has moved. These tests hold that fsync open (and fail it)
 * to check what a query sees meanwhile: never a write that is not published, and
 * nothing of a write that failed.
 */

const ADMIN: Actor = { keyId: 'key_admin', keyName: 'admin', orgId: 'acme', role: 'admin' };

/** node's fs, except that the fsync of refs/heads can be held until released, and then made to fail. */
class HeldFs {
  holding = false;
  failRefUpdate = false;
  /** Resolves when a held fsync starts. */
  syncHeld: Promise<void> = new Promise(() => undefined);
  private release: () => void = () => undefined;
  private held: () => void = () => undefined;

  hold(): void {
    this.holding = true;
    this.syncHeld = new Promise((resolve) => (this.held = resolve));
  }

  letGo(): void {
    this.holding = false;
    this.release();
  }

  readonly fs: FsPromises = {
    ...(nodeFs as unknown as FsPromises),
    open: async (path: string, flags: string, mode?: number): Promise<FileHandleLike> => {
      const handle = await nodeFs.open(path, flags, mode);
      if (!this.holding || !path.endsWith('/refs/heads')) return handle;
      return {
        write: (data) => (typeof data === 'string' ? handle.write(data) : handle.write(data)),
        chmod: (m) => handle.chmod(m),
        close: () => handle.close(),
        read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
        stat: () => handle.stat(),
        sync: async () => {
          const released = new Promise<void>((resolve) => (this.release = resolve));
          this.held();
          await released;
          if (this.failRefUpdate) {
            this.failRefUpdate = false;
            throw Object.assign(new Error('EIO: i/o error (injected)'), { code: 'EIO' });
          }
          await handle.sync();
        },
      };
    },
  };
}

describe('storage/search: a batch staged while its ref update is fsynced', function () {
  this.timeout(30_000);

  let dir: string;
  let cleanup: () => Promise<void>;
  let store: OrgStore;
  let held: HeldFs;
  let repo: OrgRepo;

  const put = (path: string, content: string): ReturnType<typeof putItem> => putItem({ repo, actor: ADMIN, path, content, maxContentBytes: 1 << 20 });
  const found = async (q: string): Promise<string[]> => (await searchItems({ repo, actor: ADMIN, q, limit: 100 })).results.map((r) => r.record.path).sort();
  const ticks = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };

  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('ks-search-staged'));
    held = new HeldFs();
    store = new OrgStore({ fs: held.fs, dataDir: dir, logger: silentLogger, git: hostGit, owner: true, search: { readNeed } });
    await store.create('acme', new Date('2026-01-01T00:00:00Z'));
    const opened = await store.get('acme');
    if (!opened) throw new Error('no organization acme');
    repo = opened;
    await put('notes/a.md', 'apple');
  });
  afterEach(async () => {
    held.letGo();
    await store.closeAll().catch(() => undefined);
    await cleanup();
  });

  it('a query that starts while the write is being made durable waits, and sees it only once it is published', async () => {
    const before = await readRef(held.fs, repo.gitdir);
    held.hold();
    const writing = put('notes/b.md', 'apple banana');
    await held.syncHeld;
    await ticks(5); // the index has staged the batch by now: its transaction is open
    let answered: string[] | null = null;
    const searching = found('banana').then((paths) => (answered = paths));
    await ticks(20);
    expect(answered, 'a query answered while a staged transaction was open').to.equal(null);
    // Renamed on disk, not yet durable: the repository still serves the branch as it was.
    expect(repo.headCommit).to.equal(before);
    held.letGo();
    await writing;
    expect(await searching).to.deep.equal(['notes/b.md']);
    expect(await found('apple')).to.deep.equal(['notes/a.md', 'notes/b.md']);
  });

  it('a catch-up asked for while a batch is staged waits for it, and never takes the staged rows for its own', async () => {
    const index = repo.search;
    if (!index) throw new Error('no search index');
    held.hold();
    const writing = put('notes/d.md', 'damson');
    await held.syncHeld;
    await ticks(5); // staged: notes/d.md is in the open transaction, not yet in the repository
    const catching = index.catchUp();
    await ticks(5);
    held.letGo();
    await writing;
    await catching;
    expect(await found('damson')).to.deep.equal(['notes/d.md']);
    expect(index.differences()).to.deep.equal([]);
  });

  it('a write made while a catch-up runs is applied once published, and the index ends at that head', async () => {
    for (let i = 0; i < 20; i++) await put(`notes/n${i}.md`, `nectarine ${i}`);
    const index = repo.search;
    if (!index) throw new Error('no search index');
    // Rows whose blob disagrees with the repository: the catch-up reads their texts again.
    staleRows(index, 'notes/n');
    const catching = index.catchUp();
    await put('notes/e.md', 'elderberry');
    expect((await catching).written).to.equal(20);
    expect(await found('elderberry')).to.deep.equal(['notes/e.md']);
    expect(await found('nectarine')).to.have.lengthOf(20);
    expect(index.differences()).to.deep.equal([]);
  });

  it('a batch that cannot be applied while a catch-up runs leaves the index stale, so the next query catches up again', async () => {
    for (let i = 0; i < 20; i++) await put(`notes/m${i}.md`, `mango ${i}`);
    const index = repo.search;
    if (!index) throw new Error('no search index');
    type Entry = { record: { path: string } };
    const inside = index as unknown as {
      apply: (...args: unknown[]) => void;
      textOf: (entry: Entry) => Promise<string>;
    };
    staleRows(index, 'notes/m');
    // The catch-up is held while it reads those texts, so the next batch is published while it runs.
    const textOf = inside.textOf.bind(index);
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    inside.textOf = async (entry) => {
      if (entry.record.path.startsWith('notes/m')) await held;
      return textOf(entry);
    };
    const catching = index.catchUp();
    // The next batch's rows fail to be written (as a full disk would): the write itself stands.
    const apply = inside.apply;
    inside.apply = function (): void {
      inside.apply = apply;
      throw new Error('injected: the batch could not be applied');
    };
    await put('notes/f.md', 'feijoa');
    release();
    await catching;
    inside.textOf = textOf;
    // The catch-up's list was made before that batch: only a second catch-up brings its rows in.
    expect(await found('feijoa')).to.deep.equal(['notes/f.md']);
    expect(index.differences()).to.deep.equal([]);
  });

  it('a write that fails after its batch was staged leaves nothing of it in the index', async () => {
    held.hold();
    held.failRefUpdate = true;
    const writing = put('notes/c.md', 'cherry').then(
      () => 'answered 200',
      () => 'failed',
    );
    await held.syncHeld;
    await ticks(5);
    const searching = found('cherry');
    held.letGo();
    expect(await writing).to.equal('failed');
    expect(await searching).to.deep.equal([]);
    expect(await found('apple')).to.deep.equal(['notes/a.md']);
    expect(repo.search?.differences()).to.deep.equal([]);
    // The same write, once the disk behaves, is found by the next query.
    await put('notes/c.md', 'cherry');
    expect(await found('cherry')).to.deep.equal(['notes/c.md']);
    expect(repo.search?.differences()).to.deep.equal([]);
  });
});

/** Makes the index's rows under `prefix` say they were built from another content, as an index file left behind would. */
function staleRows(index: object, prefix: string): void {
  const file = (index as { db: { db: { run(sql: string, values: unknown[]): unknown } } }).db.db;
  file.run('UPDATE items SET blob = ? WHERE path >= ? AND path < ?', ['0'.repeat(40), prefix, `${prefix}\uffff`]);
}
