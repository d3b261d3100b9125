import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { silentMetrics } from '../../../src/common/metrics.js';
import { OPEN_AT_ONCE, OpenOrgs, type OpenRepo } from '../../../src/storage/repo/openOrgs.js';

/** OpenOrgs over stand-in repositories: which ones it closes, when, and that nobody is handed a closed one. */

class FakeRepo implements OpenRepo {
  idle = true;
  queuedWrites = 0;
  closed = false;
  /** A close that takes its time: it ends when the test calls finishClose. */
  slow = false;
  /** Ends the close under way (set once close is called). */
  finishClose: (() => void) | null = null;

  constructor(readonly orgId: string, readonly generation: number) {}

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.finishClose = () => {
        this.closed = true;
        resolve();
      };
      if (!this.slow) this.finishClose();
    });
  }
}

interface Harness {
  orgs: OpenOrgs<FakeRepo>;
  /** Every repository opened, in order. */
  made: FakeRepo[];
  closes: number;
  /** Organizations that exist (an open of any other resolves null). */
  existing: Set<string>;
  open(): string[];
}

function harness(maxOpen: number, options: { openGate?: () => Promise<void> } = {}): Harness {
  const made: FakeRepo[] = [];
  const existing = new Set(['a', 'b', 'c', 'd', 'e']);
  const h: Harness = {
    made,
    closes: 0,
    existing,
    orgs: new OpenOrgs<FakeRepo>({
      openRepo: async (orgId) => {
        await options.openGate?.();
        if (!existing.has(orgId)) return null;
        const repo = new FakeRepo(orgId, made.filter((r) => r.orgId === orgId).length);
        made.push(repo);
        return repo;
      },
      maxOpen,
      logger: silentLogger,
      metrics: { ...silentMetrics, orgClosed: () => void h.closes++ },
    }),
    open: () => made.filter((r) => !r.closed && r.finishClose === null).map((r) => r.orgId).sort(),
  };
  return h;
}

/** Holds each organization in turn, releasing it at once (one request each). */
async function visit(h: Harness, ...ids: string[]): Promise<void> {
  for (const id of ids) {
    const lease = await h.orgs.hold(id);
    if (!lease) throw new Error(`no organization ${id}`);
    lease.release();
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('storage: open organizations, and closing the idle ones', () => {
  it('keeps at most maxOpen open, closing the least recently used', async () => {
    const h = harness(2);
    await visit(h, 'a', 'b', 'a', 'c');
    expect(h.open()).to.deep.equal(['a', 'c']); // b was the least recently used, not a
    expect(h.closes).to.equal(1);
    expect(h.orgs.stats().openOrganizations).to.equal(2);
    await visit(h, 'd', 'e');
    expect(h.open()).to.deep.equal(['d', 'e']);
    expect(h.closes).to.equal(3);
  });

  it('closes nothing with no limit', async () => {
    const h = harness(0);
    await visit(h, 'a', 'b', 'c', 'd', 'e');
    expect(h.open()).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(h.closes).to.equal(0);
  });

  it('never closes one that is held, until its last lease is released', async () => {
    const h = harness(1);
    const first = await h.orgs.hold('a');
    const second = await h.orgs.hold('a');
    const b = await h.orgs.hold('b');
    expect(h.open()).to.deep.equal(['a', 'b']); // both held: the limit gives way
    first?.release();
    first?.release(); // twice is once: a is still held by the second lease
    expect(h.open()).to.deep.equal(['a', 'b']);
    second?.release();
    expect(h.open()).to.deep.equal(['b']); // closed by its own last release, once closable
    b?.release();
    expect(h.open()).to.deep.equal(['b']);
  });

  it('never closes one with something under way; a release closes it once it is idle', async () => {
    const h = harness(1);
    await visit(h, 'a');
    const a = h.made[0] as FakeRepo;
    a.idle = false; // a write in flight, a repack, a search build
    const b = await h.orgs.hold('b');
    await visit(h, 'c');
    expect(h.open()).to.deep.equal(['a', 'b']); // c went instead: a is busy, b held
    a.idle = true;
    b?.release();
    expect(h.open()).to.deep.equal(['b']);
  });

  it('never closes one kept open', async () => {
    const h = harness(1);
    h.orgs.keep('a');
    h.orgs.keep('b');
    await visit(h, 'a', 'b', 'c', 'd');
    expect(h.open()).to.deep.equal(['a', 'b']);
    expect(h.closes).to.equal(2);
  });

  it('closes one kept open once each of its keeps is let go (each once), at once when nobody holds it', async () => {
    const h = harness(1);
    const mirrors = h.orgs.keep('a');
    const hooks = h.orgs.keep('a');
    await visit(h, 'a', 'b');
    expect(h.open()).to.deep.equal(['a']); // b closed at its release: a is kept
    hooks();
    hooks(); // twice is once: the mirrors' keep still holds
    await visit(h, 'c');
    expect(h.open()).to.deep.equal(['a']);
    const lease = await h.orgs.hold('a');
    mirrors();
    expect(h.open()).to.deep.equal(['a']); // held: closed at its release, not under its holder
    const d = await h.orgs.hold('d');
    expect(h.open()).to.deep.equal(['a', 'd']);
    lease?.release();
    expect(h.open()).to.deep.equal(['d']);
    d?.release();
    h.orgs.keep('d')(); // not over the limit: a keep let go closes nothing
    expect(h.open()).to.deep.equal(['d']);
  });

  it('opens a closing one again only once its close has finished, and hands out the new one', async () => {
    const h = harness(1);
    await visit(h, 'a');
    const old = h.made[0] as FakeRepo;
    old.slow = true;
    await visit(h, 'b'); // a's close starts, and waits
    expect(old.finishClose).to.not.equal(null);
    const again = h.orgs.hold('a');
    for (let i = 0; i < 5; i++) await tick();
    expect(h.made.filter((r) => r.orgId === 'a')).to.have.length(1); // not opened beside the one closing
    old.finishClose?.();
    const lease = await again;
    expect(lease?.repo).to.not.equal(old);
    expect(lease?.repo.generation).to.equal(1);
    expect(lease?.repo.closed).to.equal(false);
    lease?.release();
  });

  it('holds nothing for an organization that does not exist, and opens it once it does', async () => {
    const h = harness(1);
    expect(await h.orgs.hold('x')).to.equal(null);
    h.existing.add('x');
    await visit(h, 'x', 'a');
    expect(h.open()).to.deep.equal(['a']); // x was closable: the failed hold left no lease behind
  });

  it('a failed open holds nothing and is not kept: the next use tries again', async () => {
    let fail = true;
    const h = harness(1, { openGate: async () => { if (fail) throw new Error('disk gone'); } });
    const err = await h.orgs.hold('a').then(() => null, (e: unknown) => e);
    expect(String(err)).to.contain('disk gone');
    fail = false;
    await visit(h, 'a', 'b');
    expect(h.open()).to.deep.equal(['b']);
  });

  it('closeAll closes every open one and waits for those still closing', async () => {
    const h = harness(1);
    await visit(h, 'a');
    (h.made[0] as FakeRepo).slow = true;
    await visit(h, 'b');
    let done = false;
    const all = h.orgs.closeAll().then(() => (done = true));
    for (let i = 0; i < 5; i++) await tick();
    expect(done).to.equal(false);
    (h.made[0] as FakeRepo).finishClose?.();
    await all;
    expect(h.made.every((r) => r.closed)).to.equal(true);
  });

  it('openEach opens a few at a time and names the ones that could not be opened', async () => {
    let running = 0;
    let most = 0;
    const h = harness(0, {
      openGate: async () => {
        running++;
        most = Math.max(most, running);
        await tick();
        running--;
      },
    });
    for (let i = 0; i < 2 * OPEN_AT_ONCE; i++) h.existing.add(`org${i}`);
    const ids = [...h.existing, 'missing'];
    const result = await h.orgs.openEach(ids);
    expect(result).to.deep.equal({ opened: ids.length - 1, failed: ['missing'] });
    expect(most).to.equal(OPEN_AT_ONCE);
  });

  it('openEach does not open again what it opened before and the limit closed since (readiness asks every second)', async () => {
    const h = harness(2);
    h.existing.delete('e');
    const ids = ['a', 'b', 'c', 'd', 'e'];
    expect(await h.orgs.openEach(ids)).to.deep.equal({ opened: 4, failed: ['e'] });
    expect(h.made).to.have.length(4);
    expect(h.orgs.stats().openOrganizations).to.equal(2);
    // Again: a and b are closed, but were opened: only e, which failed, is tried again, and now exists.
    h.existing.add('e');
    expect(await h.orgs.openEach(ids)).to.deep.equal({ opened: 5, failed: [] });
    expect(h.made.map((r) => r.orgId)).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
  });
});
