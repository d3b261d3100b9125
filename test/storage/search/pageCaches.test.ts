import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { indexesThatFit, MAX_PAGE_CACHE_KIB, MIN_PAGE_CACHE_KIB, PageCaches, type PageCacheSeat } from '../../../src/storage/search/pageCaches.js';
import { SearchDb } from '../../../src/storage/search/searchDb.js';
import { ROOT } from '../../support/child.js';
import { random } from '../../support/random.js';
import { tmpDir } from '../../support/tmp.js';

const MIB = 1024 * 1024;

/**
 * Every search index of a process shares one WebAssembly SQLite heap of at most 2 GiB that never shrinks; each
 * connection's page cache was bounded, not their sum (125 searched organizations of ~5,000 items filled it, and
 * every SQLite call failed from then on). The budget shares one figure among the open indexes.
 */
describe('storage/search: the page caches share one budget', () => {
  it('shares the budget equally in powers of two, lowers at once, raises only with a fifth to spare', () => {
    const caches = new PageCaches(64 * MIB);
    const applied: number[][] = [];
    const seats: PageCacheSeat[] = [];
    const join = (): void => {
      const told: number[] = [];
      applied.push(told);
      seats.push(caches.join((kib) => told.push(kib)));
    };
    const seat = (i: number): PageCacheSeat => seats[i] as PageCacheSeat;
    for (let i = 0; i < 4; i++) join();
    expect(seats.map((s) => s.kib)).to.deep.equal([16_384, 16_384, 16_384, 16_384]);
    expect(applied.flat(), 'nothing moved: nobody told').to.deep.equal([]);
    join(); // 5 × 13,107 KiB would fit: 8 MiB each
    expect(seats.map((s) => s.kib)).to.deep.equal([8_192, 8_192, 8_192, 8_192, 8_192]);
    expect(applied).to.deep.equal([[8_192], [8_192], [8_192], [8_192], []]);
    seat(4).leave(); // 4 left: 16 MiB each would fit, but not 5 of them: stays
    expect(caches.perIndexKib).to.equal(8_192);
    seat(4).leave(); // twice is once
    expect(caches.indexes).to.equal(4);
    seat(3).leave(); // 3 left: 4 would fit at 16 MiB
    expect(caches.perIndexKib).to.equal(16_384);
    expect(applied.slice(0, 3)).to.deep.equal([[8_192, 16_384], [8_192, 16_384], [8_192, 16_384]]);
    expect(applied[3], 'one that left is not told').to.deep.equal([8_192]);
  });

  it('says how many indexes fit in SQLite\'s 2 GiB heap beside the page caches and a reserve', () => {
    expect(indexesThatFit(256 * MIB)).to.equal(6_144); // (2048 - 256 - 256) MiB at a quarter MiB each
    expect(indexesThatFit(1024 * MIB)).to.equal(3_072);
    expect(indexesThatFit(1792 * MIB)).to.equal(0);
  });

  it('keeps the sum within the budget through random openings and closings (a model)', () => {
    for (const seed of [1, 2, 3]) {
      const rnd = random(seed);
      const total = (1 + Math.floor(rnd() * 300)) * MIB;
      const caches = new PageCaches(total);
      const open = new Map<PageCacheSeat, { told: number }>();
      let steps = 0;
      for (let step = 0; step < 3_000; step++) {
        if (open.size > 0 && rnd() < 0.45) {
          const seats = [...open.keys()];
          const seat = seats[Math.floor(rnd() * seats.length)] as PageCacheSeat;
          open.delete(seat);
          seat.leave();
        } else {
          const state = { told: 0 };
          const seat = caches.join((kib) => {
            expect(open.has(seat), 'told after it left').to.equal(true);
            state.told = kib;
          });
          state.told = seat.kib;
          open.set(seat, state);
        }
        const share = caches.perIndexKib;
        expect(Math.log2(share) % 1, 'a power of two').to.equal(0);
        expect(share).to.be.within(MIN_PAGE_CACHE_KIB, MAX_PAGE_CACHE_KIB);
        const unlike = [...open].filter(([seat, state]) => seat.kib !== share || state.told !== share);
        expect(unlike.length, 'every open index told the share').to.equal(0);
        if (share > MIN_PAGE_CACHE_KIB) expect(share * 1024 * open.size, `seed ${seed}, step ${step}`).to.be.at.most(total);
        // Never lower than the hysteresis allows: a fifth more indexes would not fit at twice the share.
        if (share < MAX_PAGE_CACHE_KIB) expect(2 * share * 1024 * Math.ceil((open.size * 5) / 4)).to.be.above(total);
        steps++;
      }
      expect(steps).to.equal(3_000);
    }
  });

  it('sets each connection\'s cache_size to its share as indexes open and close, and after a pass with less', async () => {
    const { dir, cleanup } = await tmpDir();
    const caches = new PageCaches(8 * MIB);
    const dbs = [0, 1, 2].map((i) => SearchDb.open(join(dir, `s${i}.sqlite`), silentLogger, caches));
    const first = dbs[0] as SearchDb;
    try {
      expect(dbs.map((db) => db.pageCacheKib()), 'three share 8 MiB: 2 MiB each').to.deep.equal([2_048, 2_048, 2_048]);
      expect(first.withPageCache(1_024, () => first.pageCacheKib())).to.equal(1_024);
      expect(first.withPageCache(100_000, () => first.pageCacheKib()), 'never more than the share').to.equal(2_048);
      expect(first.pageCacheKib(), 'back to the share').to.equal(2_048);
      dbs.pop()?.close();
      expect(dbs.map((db) => db.pageCacheKib()), 'two: 4 MiB would not fit three').to.deep.equal([2_048, 2_048]);
      dbs.pop()?.close();
      expect(first.pageCacheKib()).to.equal(4_096);
      expect(caches.indexes).to.equal(1);
    } finally {
      for (const db of dbs) db.close();
      await cleanup();
    }
    expect(caches.indexes, 'closed: left').to.equal(0);
  });

  it('bounds what SQLite\'s heap holds once every index has read its file (a fresh process per budget)', async function () {
    this.timeout(60_000);
    const { dir, cleanup } = await tmpDir();
    try {
      const files = [0, 1, 2, 3, 4, 5].map((i) => join(dir, `s${i}.sqlite`));
      // ~3.5 MB each: 600 items of ~5 KB of words no two items share alike (so FTS5's pages hold them all).
      for (const [f, file] of files.entries()) {
        const db = SearchDb.open(file, silentLogger, new PageCaches(MIB));
        const rnd = random(f + 1);
        db.transaction(() => {
          for (let i = 0; i < 600; i++) {
            const words = Array.from({ length: 700 }, () => `w${Math.floor(rnd() * 50_000).toString(36)}`);
            db.put({ path: `n/${i}.md`, blob: `b${i}`, need: 0, text: words.join(' ') });
          }
        });
        db.close();
      }
      // With a budget of 96 MiB each index may hold its whole file (the 16 MiB it had before): the heap grows by
      // all six. With 3 MiB, by half a MiB each at most, plus what a connection keeps.
      const unbounded = await heapGrowth(96, files);
      const bounded = await heapGrowth(3, files);
      expect(unbounded, `unbounded ${unbounded} bytes`).to.be.above(18 * MIB);
      expect(bounded, `bounded ${bounded} bytes, unbounded ${unbounded}`).to.be.below(10 * MIB);
    } finally {
      await cleanup();
    }
  });
});

/** How much SQLite's heap grew (process.memoryUsage().external) in a new process that opened `files` and read each one whole. */
function heapGrowth(budgetMib: number, files: string[]): Promise<number> {
  const script = `
    import { PageCaches } from './src/storage/search/pageCaches.ts';
    import { SearchDb } from './src/storage/search/searchDb.ts';
    import { silentLogger } from './src/common/log.ts';
    const caches = new PageCaches(${budgetMib} * 1024 * 1024);
    const before = process.memoryUsage().external;
    const dbs = ${JSON.stringify(files)}.map((f) => SearchDb.open(f, silentLogger, caches));
    // Every page of every table: what a catch-up, a rebuild's check and the searches of a day read.
    for (const db of dbs) if (!db.quickCheck()) throw new Error('damaged');
    process.stdout.write(String(process.memoryUsage().external - before));
  `;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(Number(stdout));
    });
  });
}
