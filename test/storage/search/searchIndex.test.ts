import { open as open_, writeFile, rm, stat } from 'node:fs/promises';
import { expect } from 'chai';
import sqlite from 'node-sqlite3-wasm';
import { createLogger, type Logger } from '../../../src/common/log.js';
import type { Actor } from '../../../src/domain/keys.js';
import { setFolderRule } from '../../../src/domain/folders.js';
import { deleteItem, putItem } from '../../../src/domain/items.js';
import { STORE_RULES } from '../../../src/domain/integrity.js';
import { readNeed, searchItems } from '../../../src/domain/search.js';
import { OrgStore, SEARCH_FILE } from '../../../src/storage/repo/orgStore.js';
import { checkSearchFile } from '../../../src/storage/search/fileCheck.js';
import { SearchDb } from '../../../src/storage/search/searchDb.js';
import { hostGit } from '../../support/git.js';
import { fs } from '../../support/server.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The search index's life beside the repository: reused after a clean stop, caught up with
 * writes made while it was not kept, rebuilt when missing or unreadable (with progress in the
 * log), and compared with the tree by `verify`.
 */

const ADMIN: Actor = { keyId: 'key_admin', keyName: 'admin', orgId: 'acme', role: 'admin' };
const READER: Actor = { ...ADMIN, keyId: 'key_reader', keyName: 'reader', role: 'reader' };

interface Logged {
  msg: string;
  level: string;
  [k: string]: unknown;
}

describe('storage/search: the index beside the repository', function () {
  this.timeout(60_000);

  let dir: string;
  let cleanup: () => Promise<void>;
  let logged: Logged[];
  let stores: OrgStore[];

  const logger = (): Logger => createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line) as Logged) });
  /** A store as the server keeps it (`search` on) or as a process without the index (off). */
  const open = (search = true, progressEvery?: number): OrgStore => {
    const store = new OrgStore({ fs, dataDir: dir, logger: logger(), git: hostGit, owner: true, ...(search ? { search: { readNeed, progressEvery } } : {}) });
    stores.push(store);
    return store;
  };
  const repoOf = async (store: OrgStore) => {
    const repo = await store.get('acme');
    if (!repo) throw new Error('no organization acme');
    return repo;
  };
  const put = async (store: OrgStore, path: string, content: string, requiredReadPermission?: string): Promise<void> => {
    await putItem({ repo: await repoOf(store), actor: ADMIN, path, content, maxContentBytes: 1 << 20, ...(requiredReadPermission ? { requiredReadPermission } : {}) });
  };
  const found = async (store: OrgStore, q: string, actor = ADMIN): Promise<string[]> =>
    (await searchItems({ repo: await repoOf(store), actor, q, limit: 100 })).results.map((r) => r.record.path).sort();
  const file = (): string => `${dir}/orgs/acme.git/${SEARCH_FILE}`;
  /** `n` items (`<folder>/i<k>.md`: "<word> number<k>") written, then the index file deleted: the next store builds it again. */
  const withoutIndexFile = async (n: number, folder: string, word: string): Promise<void> => {
    const first = open();
    for (let i = 0; i < n; i++) await put(first, `${folder}/i${i}.md`, `${word} number${i}`);
    await first.closeAll();
    SearchDb.remove(file());
    logged = [];
  };
  /** The index file opened directly, as the store opens it (a WAL file opens only under exclusive locking). */
  const rawDb = (): InstanceType<typeof sqlite.Database> => {
    const db = new sqlite.Database(file());
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    return db;
  };

  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('ks-search'));
    logged = [];
    stores = [];
    await open(false).create('acme', new Date('2026-01-01T00:00:00Z'));
  });
  afterEach(async () => {
    for (const s of stores) await s.closeAll().catch(() => undefined);
    await cleanup();
  });

  /** Two items written by a store that is then stopped cleanly (its index saved). */
  const writtenAndStopped = async (): Promise<void> => {
    const first = open();
    await put(first, 'a/one.md', 'apricot');
    await put(first, 'a/two.md', 'blueberry');
    await first.closeAll();
  };

  it('is reused after a clean stop: nothing rebuilt, everything found', async () => {
    await writtenAndStopped();
    logged = [];
    const second = open();
    expect(await found(second, 'apricot')).to.deep.equal(['a/one.md']);
    expect(logged.filter((l) => l.msg.startsWith('search index'))).to.deep.equal([]);
  });

  it('loads its ranking index in memory at the first search, not at the open', async () => {
    await writtenAndStopped();
    logged = [];
    const second = open();
    await put(second, 'a/three.md', 'cherry'); // opens the organization and writes: no load yet
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logged.filter((l) => l.msg.startsWith('search ranking index'))).to.deep.equal([]);
    expect(await found(second, 'apricot')).to.deep.equal(['a/one.md']);
    await (await repoOf(second)).search?.rankLoaded();
    expect(logged.filter((l) => l.msg === 'search ranking index ready')).to.have.length(1);
    expect(await found(second, 'cherry')).to.deep.equal(['a/three.md']);
  });

  it('keeps no copy of its rows in memory: a reused index, its searches and writes read rows one by one from the file', async () => {
    await writtenAndStopped();
    // Reading every row (the catch-up's pass, `verify`) is what a copy held for the server's life needed at each open.
    const readAll = SearchDb.prototype.indexed;
    let allRead = 0;
    SearchDb.prototype.indexed = function (this: SearchDb) {
      allRead++;
      return readAll.call(this);
    };
    try {
      const second = open();
      expect(await found(second, 'apricot')).to.deep.equal(['a/one.md']);
      await put(second, 'a/one.md', 'cranberry');
      await put(second, 'a/three.md', 'damson');
      await deleteItem({ repo: await repoOf(second), actor: ADMIN, path: 'a/two.md' });
      expect(await found(second, 'cranberry')).to.deep.equal(['a/one.md']);
      expect(await found(second, 'apricot')).to.deep.equal([]);
      expect(await found(second, 'blueberry')).to.deep.equal([]);
      expect(await found(second, 'damson')).to.deep.equal(['a/three.md']);
      expect(allRead).to.equal(0);
    } finally {
      SearchDb.prototype.indexed = readAll;
    }
  });

  it('catches up with writes made while no index was kept (reads only what changed)', async () => {
    const first = open();
    await put(first, 'a/one.md', 'apricot');
    await put(first, 'a/two.md', 'blueberry');
    await put(first, 'vault/three.md', 'cherry');
    await first.closeAll();
    const without = open(false);
    await put(without, 'a/one.md', 'damson');
    await deleteItem({ repo: await repoOf(without), actor: ADMIN, path: 'a/two.md' });
    await put(without, 'a/four.md', 'elderberry');
    await setFolderRule({ repo: await repoOf(without), actor: ADMIN, folder: 'vault', requiredReadPermission: 'knowledge:admin' });
    await without.closeAll();
    logged = [];
    const again = open();
    expect(await found(again, 'apricot')).to.deep.equal([]);
    expect(await found(again, 'damson')).to.deep.equal(['a/one.md']);
    expect(await found(again, 'blueberry')).to.deep.equal([]);
    expect(await found(again, 'elderberry')).to.deep.equal(['a/four.md']);
    expect(await found(again, 'cherry', READER)).to.deep.equal([]);
    expect(await found(again, 'cherry', ADMIN)).to.deep.equal(['vault/three.md']);
    const caughtUp = logged.find((l) => l.msg === 'search index caught up');
    expect(caughtUp).to.include({ written: 2, removed: 1, needs: 1 });
    expect((await again.verify('acme', STORE_RULES)).problems).to.deep.equal([]);
  });

  it('is built again when its file is missing, with progress in the log', async () => {
    await withoutIndexFile(10, 'b', 'fig');
    const again = open(true, 3);
    expect(await found(again, 'fig')).to.have.lengthOf(10);
    const progress = logged.filter((l) => l.msg === 'search index: building');
    expect(progress[0]).to.include({ items: 10, of: 10 });
    expect(progress.at(-1)).to.include({ done: 10, of: 10 });
    expect(logged.find((l) => l.msg === 'search index caught up')).to.include({ written: 10, removed: 0 });
  });

  it('is built in the background: the organization answers at once, searches wait for the build, writes made meanwhile are found', async () => {
    await withoutIndexFile(300, 'd', 'kiwi');
    const again = open(true, 100);
    const repo = await repoOf(again);
    // Opened before the build is done (it reads the items' texts from git, a turn of I/O at least).
    expect(logged.some((l) => l.msg === 'search index caught up')).to.equal(false);
    expect(logged.find((l) => l.msg === 'search index: building')).to.include({ items: 300, of: 300 });
    expect(repo.get('d/i7.md')?.record.path).to.equal('d/i7.md');
    // A write while the build runs: applied as it is published, found by the next search.
    await put(again, 'd/late.md', 'kiwi late');
    expect(await found(again, 'late')).to.deep.equal(['d/late.md']);
    expect(await found(again, 'number0')).to.deep.equal(['d/i0.md']);
    expect(await found(again, 'number299')).to.deep.equal(['d/i299.md']);
    expect(logged.find((l) => l.msg === 'search index caught up')).to.include({ removed: 0 });
    expect((await again.verify('acme', STORE_RULES)).problems).to.deep.equal([]);
  });

  it("charges a query its own time, not its wait for the build (what a key's search time is charged)", async () => {
    await withoutIndexFile(300, 'w', 'pear');
    // When the build says it is done, as it is logged.
    const builtAt = new Promise<number>((resolve) => {
      const push = logged.push.bind(logged);
      logged.push = (...entries: Logged[]): number => {
        if (entries.some((e) => e.msg === 'search index caught up')) resolve(performance.now());
        return push(...entries);
      };
    });
    const again = open(true, 100);
    const index = (await repoOf(again)).search;
    if (!index) throw new Error('no index');
    const started = performance.now();
    const { hits, ms } = await index.search({ terms: { include: [{ text: 'pear', prefix: false }], exclude: [] }, needs: [0, 1, 2, 3], limit: 10, offset: 0 });
    const ended = performance.now();
    const built = await builtAt;
    expect(hits).to.have.lengthOf(10);
    expect(built, 'the search waited for the build').to.be.above(started);
    // Charged what came after the build, never the wait before it.
    expect(ms, `waited ${(built - started).toFixed(1)} ms, then ${(ended - built).toFixed(1)} ms; charged ${ms.toFixed(2)} ms`).to.be.above(0).and.at.most(ended - built + 1);
  });

  it('is started afresh when its file is not a database, and rebuilt', async () => {
    const first = open();
    await put(first, 'c/x.md', 'grape');
    await first.closeAll();
    await writeFile(file(), Buffer.alloc(8192, 0x5a));
    logged = [];
    const again = open();
    expect(await found(again, 'grape')).to.deep.equal(['c/x.md']);
    expect(logged.some((l) => l.msg === 'search index unreadable; starting it afresh' && l.level === 'warn')).to.equal(true);
  });

  it('is started afresh when it holds another format', async () => {
    const first = open();
    await put(first, 'c/x.md', 'grape');
    await first.closeAll();
    const db = rawDb();
    db.run("UPDATE meta SET value = '0' WHERE key = 'format'");
    db.close();
    const again = open();
    expect(await found(again, 'grape')).to.deep.equal(['c/x.md']);
    expect(logged.some((l) => l.msg === 'search index unreadable; starting it afresh')).to.equal(true);
  });

  it('a format 1 index (no index of paths) gets its paths filled in place, not rebuilt; path matches still rank first', async () => {
    const first = open();
    await put(first, 'plum/notes.md', 'nothing here');
    await put(first, 'c/y.md', 'a plum tart');
    await first.closeAll();
    const db = rawDb();
    db.run("UPDATE meta SET value = '1' WHERE key = 'format'");
    db.run('DELETE FROM paths');
    db.close();
    logged = [];
    const again = open();
    const ranked = (await searchItems({ repo: await repoOf(again), actor: ADMIN, q: 'plum', limit: 10 })).results.map((r) => r.record.path);
    expect(ranked, 'the path match first: the index of paths was filled').to.deep.equal(['plum/notes.md', 'c/y.md']);
    expect(logged.some((l) => l.msg === 'search index unreadable; starting it afresh' || l.msg === 'search index caught up')).to.equal(false);
    await again.closeAll();
    const check = rawDb();
    expect(check.get("SELECT value FROM meta WHERE key = 'format'")?.value).to.equal('2');
    check.close();
  });

  it('a file not closed cleanly is checked at open, and rebuilt when damaged', async () => {
    const first = open();
    for (let i = 0; i < 40; i++) await put(first, `g/i${i}.md`, `nectarine ${'pulp '.repeat(200)}${i}`);
    await first.closeAll();
    // As a crash leaves it: not marked clean. Then pages in the middle overwritten, as a power loss might.
    const db = rawDb();
    db.run("UPDATE meta SET value = '0' WHERE key = 'clean'");
    db.close();
    const { size } = await stat(file());
    const handle = await open_(file(), 'r+');
    await handle.write(Buffer.alloc(8192, 0xa5), 0, 8192, Math.floor(size / 2 / 4096) * 4096);
    await handle.close();
    logged = [];
    const again = open();
    expect(await found(again, 'nectarine')).to.have.lengthOf(40);
    const warned = logged.filter((l) => l.level === 'warn').map((l) => l.msg);
    expect(warned.some((m) => m === 'search index damaged (not closed cleanly, check failed); rebuilding' || m === 'search index unreadable; starting it afresh'), JSON.stringify(warned)).to.equal(true);
    expect(warned, 'checked in its worker thread').not.to.include('search index: cannot check it in a worker thread; checking it here');
    expect((await again.verify('acme', STORE_RULES)).problems).to.deep.equal([]);
  });

  it('a file not closed cleanly but sound is checked off the event loop, then reused and caught up, not rebuilt', async () => {
    const first = open();
    for (let i = 0; i < 30; i++) await put(first, `g/i${i}.md`, `quince ${i}`);
    await first.closeAll();
    const db = rawDb();
    db.run("UPDATE meta SET value = '0' WHERE key = 'clean'");
    db.close();
    // Written while no index was kept: the catch-up after the check must add it.
    await put(open(false), 'g/late.md', 'quince late');
    logged = [];
    const checked: string[] = [];
    const again = new OrgStore({
      fs,
      dataDir: dir,
      logger: logger(),
      git: hostGit,
      owner: true,
      search: { readNeed, checkFile: (f) => (checked.push(f), checkSearchFile(f)) },
    });
    stores.push(again);
    expect(await found(again, 'quince')).to.have.lengthOf(31);
    expect(checked).to.deep.equal([file()]);
    const said = logged.filter((l) => l.msg.startsWith('search index')).map((l) => l.msg);
    expect(said[0]).to.equal('search index checked (not closed cleanly): sound');
    expect(said.filter((m) => m.includes('building') || m.includes('damaged') || m.includes('afresh')), JSON.stringify(said)).to.deep.equal([]);
    await again.closeAll();
    // Closed cleanly now: the next open checks nothing.
    checked.length = 0;
    const third = new OrgStore({ fs, dataDir: dir, logger: logger(), git: hostGit, owner: true, search: { readNeed, checkFile: (f) => (checked.push(f), checkSearchFile(f)) } });
    stores.push(third);
    expect(await found(third, 'quince')).to.have.lengthOf(31);
    expect(checked).to.deep.equal([]);
  });

  it('verify names every disagreement with the tree: a row missing, one too many, a stale content, a stale permission', async () => {
    const first = open();
    await put(first, 'd/a.md', 'honeydew');
    await put(first, 'd/b.md', 'jackfruit');
    await put(first, 'd/c.md', 'kumquat');
    await first.closeAll();
    const db = rawDb();
    const id = (path: string): number => Number(db.get('SELECT id FROM items WHERE path = ?', [path])?.id);
    db.run('DELETE FROM docs WHERE rowid = ?', [id('d/a.md')]);
    db.run('DELETE FROM items WHERE path = ?', ['d/a.md']);
    db.run('UPDATE items SET blob = ? WHERE path = ?', ['0'.repeat(40), 'd/b.md']);
    db.run('UPDATE items SET need = 2 WHERE path = ?', ['d/c.md']);
    db.run("INSERT INTO items (path, blob, need) VALUES ('d/ghost.md', ?, 0)", ['1'.repeat(40)]);
    db.close();
    // The file was closed cleanly at the branch's head, so the open trusts it: the damage is still there for verify.
    const store = open();
    const repo = await repoOf(store);
    const problems = (await store.verify('acme', STORE_RULES)).problems;
    expect(problems).to.include.members([
      'search index: d/a.md is missing',
      'search index: d/b.md holds an older content',
      'search index: d/c.md has a stale read permission',
      'search index: d/ghost.md is indexed but not a live item',
    ]);
    await repo.search?.catchUp();
    expect((await store.verify('acme', STORE_RULES)).problems).to.deep.equal([]);
  });

  it('ranks path matches first for words, phrases, prefixes and accents, and forgets the path of a deleted item', async () => {
    const store = open();
    await put(store, 'notes/a.md', 'Sour dough starter and café notes, then more sour dough.');
    await put(store, 'sour-dough/recipe.md', 'Flour and water.');
    await put(store, 'cafe/menu.md', 'Sour dough toast.');
    await put(store, 'bread/sourdough.md', 'A sour dough starter.');
    const ranked = async (q: string): Promise<string[]> =>
      (await searchItems({ repo: await repoOf(store), actor: ADMIN, q, limit: 100 })).results.map((r) => `${r.record.path}${r.score > 1 ? ' (path)' : ''}`);
    // The phrase is in the first path (`sour-dough` is the words `sour dough`); the others hold it in their content.
    expect((await ranked('"sour dough"'))[0]).to.equal('sour-dough/recipe.md (path)');
    expect(await ranked('"sour dough"')).to.have.length(4);
    expect((await ranked('sourd*'))[0]).to.equal('bread/sourdough.md (path)');
    expect((await ranked('café'))[0]).to.equal('cafe/menu.md (path)');
    expect((await ranked('café')).slice(1)).to.deep.equal(['notes/a.md']);
    // A word in one path and another in the content: a path match still, as long as the item holds both.
    expect(await ranked('menu toast')).to.deep.equal(['cafe/menu.md (path)']);
    // The last row deleted: the next item takes its row id, and must not inherit its path.
    await deleteItem({ repo: await repoOf(store), actor: ADMIN, path: 'bread/sourdough.md' });
    await put(store, 'other/toast.md', 'Toast with bread.');
    expect(await ranked('bread')).to.deep.equal(['other/toast.md']);
    expect(await ranked('toast')).to.deep.equal(['other/toast.md (path)', 'cafe/menu.md']);
  });

  it('makes snippets for the hits asked for alone (the look-ahead hit of a page has none), in both engines', async () => {
    const store = open();
    for (const name of ['a', 'b', 'c']) await put(store, `s/${name}.md`, `A plum ${name}, then plum again.`);
    const index = (await repoOf(store)).search;
    if (!index) throw new Error('no index');
    await index.rankLoaded();
    for (const useRank of [true, false]) {
      index.useRank = useRank;
      for (const terms of [{ include: [{ text: 'plum', prefix: false }], exclude: [] }, { include: [{ text: 'plu', prefix: true }], exclude: [] }]) {
        const { hits } = await index.search({ terms, needs: [0, 1, 2, 3], limit: 3, offset: 0, snippets: 2 });
        expect(hits.map((h) => h.snippet.includes('«plum»')), JSON.stringify({ useRank, terms })).to.deep.equal([true, true, false]);
        expect(hits[2]?.snippet).to.equal('');
      }
    }
  });

  it('a query that fails does not break the next ones (SQLite statements are compiled afresh)', async () => {
    const store = open();
    await put(store, 'e/a.md', 'lime');
    const repo = await repoOf(store);
    const index = repo.search;
    if (!index) throw new Error('no index');
    // No included term is not valid FTS5: the domain never sends it, the storage layer must survive it anyway.
    const failed = await index.search({ terms: { include: [], exclude: [{ text: 'lime', prefix: false }] }, needs: [0], limit: 5, offset: 0 }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(failed, 'the bad query fails').to.be.an('error');
    expect(await found(store, 'lime')).to.deep.equal(['e/a.md']);
  });

  it('leaves no lock behind, and a lock left by a crash does not block the next open', async () => {
    const first = open();
    await put(first, 'f/a.md', 'mango');
    await first.closeAll();
    await expectMissing(`${file()}.lock`);
    await fs.mkdir(`${file()}.lock`);
    const again = open();
    await put(again, 'f/b.md', 'mango');
    expect(await found(again, 'mango')).to.deep.equal(['f/a.md', 'f/b.md']);
  });
});

async function expectMissing(path: string): Promise<void> {
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  expect(exists, path).to.equal(false);
  await rm(path, { force: true, recursive: true });
}
