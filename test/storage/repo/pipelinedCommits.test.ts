import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { Actor } from '../../../src/domain/keys.js';
import { readNeed, searchItems } from '../../../src/domain/search.js';
import { readRef } from '../../../src/storage/git/refs.js';
import type { OrgRepo, WriteResult } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { GatedFs, type HeldSync } from '../../support/gatedFs.js';
import { fsckStrict, git, hostGit } from '../../support/git.js';
import { putIntent } from '../../support/intents.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * Two group commits in flight at once (groupCommit.ts): the second batch is built on the first and
 * its pack made durable while the first has not moved the ref yet; its ref moves only after the
 * first one's is durable, and if the first fails, the second fails too and nothing of either is
 * seen anywhere. Every fsync is held (GatedFs) and let go, or failed, by the test.
 */

const ADMIN: Actor = { keyId: 'key_admin', keyName: 'admin', orgId: 'acme', role: 'admin' };
const ROUND_ONE = ['objects/pack/tmp_idx', 'objects/pack/tmp_pack', 'refs/heads/main.next'];

describe('write pipeline: two batches in flight (real disk)', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let store: OrgStore;
  let gated: GatedFs;
  let repo: OrgRepo;
  let gitdir: string;
  /** The heads the views were told of, in order (as the event stream and the change feed are). */
  let told: string[];

  beforeEach(async () => {
    tmp = await tmpDir('pipelined');
    gitdir = join(tmp.dir, 'orgs', 'acme.git');
    gated = new GatedFs(gitdir);
    store = new OrgStore({ fs: gated.fs, dataDir: tmp.dir, logger: silentLogger, git: hostGit, owner: true, search: { readNeed } });
    await store.create('acme', new Date('2024-03-01T09:00:00Z'));
    const opened = await store.get('acme');
    if (!opened) throw new Error('no organization acme');
    repo = opened;
    await repo.write((v) => putIntent(v, 'docs/first.md', 'apple\n'));
    await repo.search?.settled();
    told = [];
    gated.events.splice(0);
    repo.addView({ name: 'recorder', published: (b) => void told.push(b.head) });
  });
  afterEach(async () => {
    gated.letAllGo();
    await store.closeAll().catch(() => undefined);
    await tmp.cleanup();
  });

  const put = (path: string, content: string): Promise<WriteResult> => repo.write((v) => putIntent(v, path, content));
  const paths = (held: HeldSync[]): string[] => held.map((h) => h.path).sort();
  const found = async (q: string): Promise<string[]> => (await searchItems({ repo, actor: ADMIN, q, limit: 100 })).results.map((r) => r.record.path).sort();
  const refFiles = async (): Promise<string[]> => (await nodeFs.readdir(join(gitdir, 'refs/heads'))).sort();
  /** Lets every held fsync go, round after round, until `until` settles. */
  const releaseAll = async (until: Promise<unknown>): Promise<void> => {
    let settled = false;
    void until.finally(() => (settled = true)).catch(() => undefined);
    for (;;) {
      await gated.quiet();
      if (settled) return;
      const round = gated.held.splice(0);
      expect(round, 'stuck').to.not.have.length(0);
      for (const h of round) h.release();
    }
  };

  /**
   * Holds the first batch's first round, then starts the second batch and makes its pack durable
   * (its first two rounds let go): returns the first batch's held fsyncs and both writes.
   */
  async function twoInFlight(a: [string, string], b: [string, string]): Promise<{ first: Promise<WriteResult>; second: Promise<WriteResult>; firstRound: HeldSync[] }> {
    gated.hold = true;
    const first = put(...a);
    await gated.quiet();
    const firstRound = gated.held.splice(0);
    expect(paths(firstRound)).to.deep.equal(ROUND_ONE);
    const second = put(...b);
    await gated.quiet();
    const secondRound = gated.held.splice(0);
    // The second batch's pack is being fsynced while the first batch's is too: the two overlap.
    expect(paths(secondRound), 'the second batch did not start while the first was in flight').to.deep.equal(ROUND_ONE);
    for (const h of secondRound) h.release();
    await gated.quiet();
    const secondDir = gated.held.splice(0);
    expect(paths(secondDir)).to.deep.equal(['objects/pack']);
    for (const h of secondDir) h.release();
    await gated.quiet();
    return { first, second, firstRound };
  }

  it('the second batch is built on the first, its pack made durable meanwhile, and its ref moves only after the first ref is durable', async () => {
    const before = repo.headCommit;
    const { first, second, firstRound } = await twoInFlight(['pipe/a.md', 'apricot\n'], ['pipe/b.md', 'blueberry\n']);
    // The second batch's pack is durable, and it waits: nothing of it is at the disk, the ref untouched.
    expect(gated.held, 'the second batch went on before the first moved the ref').to.have.length(0);
    expect(gated.events.filter((e) => e.includes('refs/heads/main')).filter((e) => !e.includes('.next'))).to.deep.equal([]);
    expect(await readRef(gated.fs, gitdir)).to.equal(before);
    for (const h of firstRound) h.release();
    await releaseAll(Promise.all([first, second]));
    const [a, b] = await Promise.all([first, second]);

    const refEvents = gated.events.filter((e) => /refs\/heads(\/main)?$/.test(e) || e === 'link refs/heads/main.lock');
    expect(refEvents, 'ref moves out of order').to.deep.equal([
      'link refs/heads/main.lock',
      'rename refs/heads/main',
      'synced refs/heads',
      'link refs/heads/main.lock',
      'rename refs/heads/main',
      'synced refs/heads',
    ]);
    // Each ref move comes after its own pack's name is durable: the first batch's is the last objects/pack synced before it.
    const firstMove = gated.events.indexOf('rename refs/heads/main');
    expect(gated.events.slice(0, firstMove).filter((e) => e === 'synced objects/pack')).to.have.length(2);
    expect((await git(['rev-parse', 'main^'], { gitdir })).trim()).to.equal(a.commitId);
    expect((await git(['rev-parse', 'main'], { gitdir })).trim()).to.equal(b.commitId);
    expect(told, 'the views heard the batches out of order').to.deep.equal([a.commitId, b.commitId]);
    expect(await found('blueberry')).to.deep.equal(['pipe/b.md']);
    expect(await refFiles()).to.deep.equal(['main']);
    await fsckStrict(gitdir);
  });

  it('while a batch is in flight, the next waits until as many writes are queued as the last batch answered, or until none is in flight', async () => {
    // A batch of two, answered: two writers are "on their way back".
    gated.hold = true;
    const lone = put('gather/a.md', 'a\n');
    await gated.quiet();
    const pair = [put('gather/b.md', 'b\n'), put('gather/c.md', 'c\n')];
    await releaseAll(Promise.all([lone, ...pair]));
    await Promise.all(pair);

    const d = put('gather/d.md', 'd\n');
    await gated.quiet();
    expect(paths(gated.held.splice(0))).to.deep.equal(ROUND_ONE);
    // One write queued while d is in flight: not yet a batch of its own.
    const e = put('gather/e.md', 'e\n');
    await gated.quiet();
    expect(gated.held, 'e was cut into a batch of its own').to.have.length(0);
    // The second one: e and f go as one batch, one pack.
    const f = put('gather/f.md', 'f\n');
    await gated.quiet();
    expect(paths(gated.held.splice(0))).to.deep.equal(ROUND_ONE);
    gated.letAllGo();
    const [, eDone, fDone] = await Promise.all([d, e, f]);
    // e and f were published as one batch: the views heard of f's commit as its head, never of e's.
    expect(told.at(-1)).to.equal(fDone.commitId);
    expect(told).to.not.include(eDone.commitId);

    // Once nothing is in flight, a lone write goes at once.
    gated.hold = true;
    const g = put('gather/g.md', 'g\n');
    await gated.quiet();
    expect(paths(gated.held.splice(0))).to.deep.equal(ROUND_ONE);
    const h = put('gather/h.md', 'h\n');
    await gated.quiet();
    expect(gated.held).to.have.length(0);
    gated.letAllGo();
    await Promise.all([g, h]);
    await fsckStrict(gitdir);
  });

  it('when the first batch fails at its ref update, the second fails too and the state is as before both', async () => {
    const before = repo.headCommit;
    const historySize = repo.history.size;
    const { first, second, firstRound } = await twoInFlight(['fail/a.md', 'apricot\n'], ['fail/b.md', 'blueberry\n']);
    for (const h of firstRound) h.release();
    await gated.quiet();
    for (const h of gated.take('objects/pack')) h.release();
    await gated.quiet();
    // The first batch's ref is renamed and its views staged; the fsync that would make it durable fails.
    const refSync = gated.take('refs/heads');
    expect(refSync).to.have.length(1);
    refSync[0]?.fail(Object.assign(new Error('EIO: i/o error (injected)'), { code: 'EIO' }));
    gated.hold = false;
    const outcomes = await Promise.allSettled([first, second]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).to.match(/EIO/);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).to.match(/earlier commit/);

    expect(repo.headCommit).to.equal(before);
    expect(await readRef(gated.fs, gitdir)).to.equal(before);
    expect(repo.get('fail/a.md')).to.equal(undefined);
    expect(repo.get('fail/b.md')).to.equal(undefined);
    expect(repo.history.size).to.equal(historySize);
    expect(told).to.deep.equal([]);
    expect(await found('apricot')).to.deep.equal([]);
    expect(await found('blueberry')).to.deep.equal([]);
    expect(repo.search?.differences()).to.deep.equal([]);
    // Neither the lock nor a staged value is left behind.
    expect(await refFiles()).to.deep.equal(['main']);

    // The next write goes on from the durable state.
    const retry = await put('fail/b.md', 'blueberry\n');
    expect((await git(['rev-parse', 'main^'], { gitdir })).trim()).to.equal(before);
    expect(told).to.deep.equal([retry.commitId]);
    expect(await found('blueberry')).to.deep.equal(['fail/b.md']);
    await fsckStrict(gitdir);
  });
});
