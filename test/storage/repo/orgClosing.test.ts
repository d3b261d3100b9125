import { readdirSync, readlinkSync } from 'node:fs';
import { expect } from 'chai';
import { createLogger, type Logger } from '../../../src/common/log.js';
import { silentMetrics } from '../../../src/common/metrics.js';
import { getItem } from '../../../src/domain/itemReads.js';
import { putItem } from '../../../src/domain/items.js';
import type { Actor } from '../../../src/domain/keys.js';
import { readNeed, searchItems } from '../../../src/domain/search.js';
import type { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore, SEARCH_FILE } from '../../../src/storage/repo/orgStore.js';
import { GitCli, type RepackReport } from '../../../src/storage/git/gitCli.js';
import { fsckStrict, hostGit } from '../../support/git.js';
import { eventually } from '../../support/gitDaemon.js';
import { random } from '../../support/random.js';
import { fs } from '../../support/server.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * Organizations closed for being idle, on a real disk with C git and the search index: what a closed one
 * held comes back when it is opened again, a write under way keeps its organization open, and users racing
 * closes and opens never meet a closed repository.
 */

const ORGS = ['acme', 'beta', 'gamma', 'delta'];
const actorOf = (orgId: string): Actor => ({ keyId: `key_${orgId}`, keyName: 'admin', orgId, role: 'admin' });

interface Logged {
  msg: string;
  org?: string;
}

describe('storage: closing idle organizations (maxOpen)', function () {
  this.timeout(120_000);

  let dir: string;
  let cleanup: () => Promise<void>;
  let logged: Logged[];
  let closes: number;
  let store: OrgStore;

  const logger = (): Logger => createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line) as Logged) });
  const open = (maxOpen: number, git: GitCli = hostGit): OrgStore =>
    new OrgStore({ fs, dataDir: dir, logger: logger(), git, owner: true, search: { readNeed }, maxOpen, metrics: { ...silentMetrics, orgClosed: () => void closes++ } });
  /** Holds the organization for the length of `use`, as a request does. */
  const using = async <T>(orgId: string, use: (repo: OrgRepo) => Promise<T>): Promise<T> => {
    const lease = await store.hold(orgId);
    if (!lease) throw new Error(`no organization ${orgId}`);
    try {
      return await use(lease.repo);
    } finally {
      lease.release();
    }
  };
  const put = (orgId: string, path: string, content: string): Promise<unknown> =>
    using(orgId, (repo) => putItem({ repo, actor: actorOf(orgId), path, content, maxContentBytes: 1 << 20 }));
  const found = (orgId: string, q: string): Promise<string[]> =>
    using(orgId, async (repo) => (await searchItems({ repo, actor: actorOf(orgId), q, limit: 100 })).results.map((r) => r.record.path).sort());

  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('ks-closing'));
    logged = [];
    closes = 0;
    const maker = new OrgStore({ fs, dataDir: dir, logger: logger(), git: hostGit });
    for (const orgId of ORGS) await maker.create(orgId, new Date('2026-01-01T00:00:00Z'));
    store = open(1);
  });
  afterEach(async () => {
    await store.closeAll();
    await cleanup();
  });

  it('opens a closed one again with its items, history and search index, which is reused, not rebuilt', async () => {
    await put('acme', 'notes/pear.md', 'a pear tree');
    await put('acme', 'notes/plum.md', 'a plum tree');
    await put('acme', 'notes/pear.md', 'a pear tree, pruned');
    expect(await found('acme', 'tree')).to.deep.equal(['notes/pear.md', 'notes/plum.md']);
    const first = await using('acme', async (repo) => repo);
    await using('beta', async () => undefined);
    expect(closes).to.equal(1);
    expect(store.stats().openOrganizations).to.equal(1);
    logged = [];
    await using('acme', async (repo) => {
      expect(repo).to.not.equal(first);
      expect((await getItem({ repo, actor: actorOf('acme'), path: 'notes/pear.md' })).content).to.equal('a pear tree, pruned');
      expect(repo.history.size).to.equal(4); // the organization's creation and the three writes
    });
    expect(await found('acme', 'pruned')).to.deep.equal(['notes/pear.md']);
    // Closed cleanly: the index file is used as it is.
    expect(logged.map((l) => l.msg).filter((m) => /search index/.test(m))).to.deep.equal([]);
    await fsckStrict(store.gitdirOf('acme'));
  });

  it('keeps one with a write under way open; the write lands, and the organization closes after it', async () => {
    const acme = await store.hold('acme');
    const beta = await store.hold('beta');
    const repo = acme?.repo as OrgRepo;
    // Queued now, and in flight until it is durable: nothing is awaited before both releases.
    const writing = putItem({ repo, actor: actorOf('acme'), path: 'late.md', content: 'written while others come and go', maxContentBytes: 1 << 20 });
    acme?.release();
    beta?.release(); // acme is the least recently used, but busy: beta is closed instead
    expect(closes).to.equal(1);
    await writing;
    expect(await using('acme', async (same) => same === repo)).to.equal(true);
    await using('gamma', async () => undefined); // acme is idle now, and the least recently used
    expect(closes).to.equal(2);
    await using('acme', async (again) => {
      expect(again).to.not.equal(repo);
      expect((await getItem({ repo: again, actor: actorOf('acme'), path: 'late.md' })).content).to.equal('written while others come and go');
    });
  });

  it('keeps one with a repack under way open, and closes it once the repack is over', async () => {
    let letGo: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    let repacking = false;
    /** C git, whose repacks wait for the test to let them go. */
    class GatedGit extends GitCli {
      override async repack(gitdir: string, options?: { full?: boolean }): Promise<RepackReport> {
        repacking = true;
        await gate;
        return super.repack(gitdir, options);
      }
    }
    await store.closeAll();
    store = open(1, new GatedGit(process.env));
    await put('acme', 'a.md', 'a pear');
    const repo = await using('acme', async (acme) => acme);
    const repack = (async () => {
      const lease = await store.hold('acme');
      try {
        return await lease?.repo.repack();
      } finally {
        lease?.release(); // released while the repack still runs: the lease is not what keeps acme open
      }
    })();
    try {
      await eventually('the repack started', async () => (repacking ? true : undefined));
      expect(repo.idle).to.equal(false);
      await using('beta', async () => undefined); // acme is the least recently used, but repacking: beta is closed instead
      expect(closes).to.equal(1);
      expect(await using('acme', async (same) => same === repo)).to.equal(true);
    } finally {
      letGo(); // a failure above must not leave the repack, and the close after the test, waiting for ever
    }
    await repack;
    expect(repo.idle).to.equal(true);
    await using('gamma', async () => undefined); // acme is idle now, and the least recently used
    expect(closes).to.equal(2);
    expect(await using('acme', async (again) => again === repo)).to.equal(false);
  });

  it('is not idle while its search index catches up, and is once it has', async () => {
    // 200 items, then the search index removed while the organization is closed: the next open rebuilds it in the background.
    await Promise.all(Array.from({ length: 200 }, (_, i) => put('acme', `notes/n${i}.md`, `pear number ${i}`)));
    await store.closeAll();
    for (const suffix of ['', '-wal', '-shm', '-journal']) await fs.rm(`${store.gitdirOf('acme')}/${SEARCH_FILE}${suffix}`, { force: true });
    store = open(1);
    const lease = await store.hold('acme');
    const repo = lease?.repo as OrgRepo;
    try {
      // The rebuild reads every item from disk: it cannot be over before the open's own continuation runs.
      expect(repo.idle).to.equal(false);
      await repo.search?.settled();
      expect(repo.idle).to.equal(true);
    } finally {
      lease?.release();
    }
    expect(await found('acme', '"pear number 137"')).to.deep.equal(['notes/n137.md']);
  });

  it('a close lets go of its pack files even when its search index fails to close', async () => {
    /** Descriptors this process holds open on acme's packs. */
    const packsOpen = (): string[] =>
      readdirSync('/proc/self/fd')
        .map((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`);
          } catch {
            return ''; // closed meanwhile (the directory's own descriptor)
          }
        })
        .filter((target) => target.startsWith(`${store.gitdirOf('acme')}/objects/pack/`));
    await put('acme', 'a.md', 'a pear');
    const search = await using('acme', async (repo) => {
      for (const entry of repo.entries()) await repo.readContent(entry); // through the pack: its descriptor opens
      return repo.search;
    });
    expect(packsOpen()).to.not.deep.equal([]);
    const closeSearch = search?.close.bind(search);
    if (search) search.close = () => { throw new Error('the disk is gone'); };
    try {
      await using('beta', async () => undefined); // acme is closed, and its search index fails to close
      expect(closes).to.equal(1);
      const failed = 'could not close an idle organization cleanly; it is opened again on its next use';
      await eventually('the failed close', async () => (logged.some((l) => l.msg === failed) ? true : undefined));
      expect(packsOpen()).to.deep.equal([]);
    } finally {
      closeSearch?.();
    }
  });

  it('users racing closes and opens never meet a closed repository, and every write is kept', async () => {
    const next = random(20261124);
    const below = (n: number): number => Math.floor(next() * n);
    const model = new Map<string, string>();
    const failures: string[] = [];
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < 30; i++) {
        const orgId = ORGS[below(ORGS.length)] as string;
        const path = `w${w}/n${below(4)}.md`;
        const op = below(3);
        try {
          if (op === 0) {
            const content = `pear ${w} ${i}`;
            await put(orgId, path, content);
            model.set(`${orgId}:${path}`, content);
          } else if (op === 1) {
            await found(orgId, 'pear');
          } else {
            await using(orgId, async (repo) => {
              for (const entry of repo.entries()) await repo.readContent(entry);
            });
          }
        } catch (err) {
          failures.push(`${orgId} op ${op}: ${String(err)}`);
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(worker));
    expect(failures).to.deep.equal([]);
    expect(closes).to.be.greaterThan(10);
    for (const [key, content] of model) {
      const [orgId, path] = key.split(':') as [string, string];
      await using(orgId, async (repo) => expect((await getItem({ repo, actor: actorOf(orgId), path })).content).to.equal(content));
    }
    for (const orgId of ORGS) {
      const paths = [...model.keys()].filter((k) => k.startsWith(`${orgId}:`)).map((k) => k.slice(orgId.length + 1)).sort();
      expect(await found(orgId, 'pear')).to.deep.equal(paths);
      await fsckStrict(store.gitdirOf(orgId));
    }
  });
});
