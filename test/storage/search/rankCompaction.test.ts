import { expect } from 'chai';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { rankPlain, type PlainQuery } from '../../../src/storage/search/rankQuery.js';
import { random } from '../../support/random.js';

/**
 * A compaction of the in-memory ranking index (RankIndex.compactStep) done a list at a time, with queries, writes,
 * rollbacks and top documents between its steps, as SearchIndex runs it in slices while the server serves. Every
 * answer must be the one of an index that never compacts (the same operations in the same order): row for row and
 * double for double, with top documents and without.
 */
describe('storage/search: a compaction in steps, the server serving between them', () => {
  const words = ['common', 'other', 'mid', 'rare', 'filler', 'text', 'nope'];
  const body = (rnd: () => number, n: number): string =>
    Array.from({ length: n }, () => {
      const r = rnd();
      return r < 0.12 ? 'common' : r < 0.2 ? 'other' : r < 0.23 ? 'mid' : r < 0.232 ? 'rare' : r < 0.24 ? 'nope' : (words[4 + Math.floor(rnd() * 2)] as string);
    }).join(' ') + ` w${Math.floor(rnd() * 400)}`;
  const queries = (rnd: () => number): PlainQuery[] =>
    Array.from({ length: 30 }, () => ({
      include: Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => (rnd() < 0.15 ? `w${Math.floor(rnd() * 400)}` : (words[Math.floor(rnd() * 4)] as string))),
      exclude: rnd() < 0.2 ? ['nope'] : [],
      needs: [[0], [0, 1], [0, 1, 2]][Math.floor(rnd() * 3)] as number[],
      limit: 1 + Math.floor(rnd() * 8),
      offset: rnd() < 0.2 ? Math.floor(rnd() * 20) : 0,
    }));

  for (const seed of [1, 2, 3]) {
    it(`answers as an index that never compacts, one list moved per step (seed ${seed})`, () => {
      const rnd = random(seed * 7919);
      let step: ((until: () => boolean) => boolean) | undefined;
      // Top documents queries found due are made between steps too, as SearchIndex makes them after the query.
      const dueTops: Array<(until: () => boolean) => boolean> = [];
      // Top documents from lists of 16 postings: many lists keep them, and must be made again where they move.
      const index = new RankIndex({ compactAt: 1_500, topFrom: 16, topSize: 8, slices: (s, what) => (what === 'compaction' ? (step = s) : dueTops.push(s)) });
      /** Runs the due top documents' work, one list a call; how many calls it took. */
      const runDueTops = (): number => {
        let calls = 0;
        for (let run = dueTops.shift(); run; run = dueTops.shift()) {
          let done = false;
          while (!done) {
            calls++;
            done = run(() => true);
          }
        }
        return calls;
      };
      let madeLater = 0;
      const never = new RankIndex({ compactAt: Number.MAX_SAFE_INTEGER, topFrom: 16, topSize: 8 });
      const both = (f: (r: RankIndex) => void): void => [index, never].forEach(f);
      const same = (label: string): void => {
        for (const q of queries(rnd)) {
          const expected = rankPlain(never, q, undefined, { topDocs: false });
          expect(rankPlain(index, q), `${label}: ${JSON.stringify(q)}`).to.deep.equal(expected);
          expect(rankPlain(index, q, undefined, { topDocs: false }), `${label}, walked: ${JSON.stringify(q)}`).to.deep.equal(expected);
        }
      };
      let serial = 0;
      const paths: string[] = [];
      for (; serial < 400; serial++) {
        paths.push(`notes/${serial}.md`);
        const text = body(rnd, 20 + Math.floor(rnd() * 80));
        const need = Math.floor(rnd() * 3);
        both((r) => r.put({ path: paths[serial] as string, text, need, rowid: serial + 1 }));
      }
      let compactions = 0;
      let steps = 0;
      for (let round = 0; round < 40; round++) {
        const rollback = rnd() < 0.25;
        both((r) => r.begin());
        for (let k = 0; k < 30; k++) {
          const at = paths[Math.floor(rnd() * paths.length)] as string;
          const roll = rnd();
          if (roll < 0.6) {
            const text = body(rnd, 10 + Math.floor(rnd() * 100));
            const need = Math.floor(rnd() * 3);
            serial++;
            both((r) => r.put({ path: at, text, need, rowid: serial }));
          } else if (roll < 0.8) both((r) => r.remove(at));
          else {
            const need = Math.floor(rnd() * 3);
            both((r) => r.setNeed(at, need));
          }
        }
        if (index.compacting) {
          // Inside a transaction a step does nothing: its rollback may need a dead document back, postings and all.
          const garbage = index.garbageShare;
          for (let k = 0; k < 20; k++) expect((step as (until: () => boolean) => boolean)(() => true), 'a step inside a transaction').to.equal(false);
          expect(index.garbageShare, 'dead postings inside a transaction').to.equal(garbage);
        }
        same(`round ${round}, staged`);
        both((r) => (rollback ? r.rollback() : r.commit()));
        same(`round ${round}`);
        // Some of the ~800 lists (words, and the paths' numbers) moved (queried between steps), then the next round's writes, the rest still in the old pool.
        for (let k = 0; k < 120 && index.compacting; k++) {
          steps++;
          if ((step as (until: () => boolean) => boolean)(() => true)) compactions++;
          if (k % 4 === 0) madeLater += runDueTops();
          if (k % 16 === 0) same(`round ${round}, step ${k}`);
        }
      }
      expect(compactions, 'compactions finished').to.be.at.least(2);
      expect(madeLater, 'top documents made after the queries that found them due').to.be.above(0);
      expect(steps, 'steps taken').to.be.above(compactions * 10);
    });
  }

  it('gives the dead postings back once done, and not before', () => {
    let step: ((until: () => boolean) => boolean) | undefined;
    const index = new RankIndex({ compactAt: 1_000, slices: (s, what) => (what === 'compaction' ? (step = s) : undefined) });
    const text = (i: number): string => `alpha beta w${i} w${i + 1} gamma${i % 7}`;
    for (let i = 0; i < 300; i++) index.put({ path: `p/${i}.md`, text: text(i), need: 0, rowid: i + 1 });
    index.begin();
    for (let i = 0; i < 300; i++) index.put({ path: `p/${i}.md`, text: text(i + 1000), need: 0, rowid: 1000 + i });
    index.commit();
    expect(index.compacting).to.equal(true);
    const garbage = index.garbageShare;
    expect(garbage).to.be.above(0.4);
    const run = step as (until: () => boolean) => boolean;
    expect(run(() => true)).to.equal(false);
    expect(index.garbageShare, 'one list moved: its dead postings gone').to.be.below(garbage);
    expect(index.compacting).to.equal(true);
    let calls = 1;
    while (!run(() => true)) calls++;
    expect(calls, 'one list a step').to.be.above(100);
    expect(index.compacting).to.equal(false);
    expect(index.garbageShare).to.equal(0);
    expect(rankPlain(index, { include: ['alpha'], exclude: [], needs: [0], limit: 3, offset: 0 }).map((r) => r.id)).to.have.length(3);
    // A step after the end has nothing to do.
    expect(run(() => true)).to.equal(true);
  });
});
