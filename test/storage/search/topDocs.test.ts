import { expect } from 'chai';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { rankPlain, type PlainQuery } from '../../../src/storage/search/rankQuery.js';
import { random } from '../../support/random.js';

/**
 * Top documents (topDocs.ts, rankTop.ts): a query over long lists scores their top documents first and walks
 * the rest only where the outside bound lets a document in. Its answers must be the walk's without them, row
 * for row and double for double (the walk is held to FTS5 by rankEngine.test.ts, as are top documents there
 * through SearchIndex), whatever happened to the index since they were made.
 */
describe('storage/search: top documents answer as the walk does', () => {
  const words = ['common', 'other', 'mid', 'rare', 'filler', 'text', 'word', 'nope'];
  /** A body of `n` tokens: "common" and "other" often, "mid" sometimes, "rare" seldom, the rest filler. */
  const body = (rnd: () => number, n: number): string =>
    Array.from({ length: n }, () => {
      const r = rnd();
      return r < 0.12 ? 'common' : r < 0.2 ? 'other' : r < 0.23 ? 'mid' : r < 0.232 ? 'rare' : r < 0.24 ? 'nope' : (words[4 + Math.floor(rnd() * 3)] as string);
    }).join(' ');
  const queries = (rnd: () => number): PlainQuery[] =>
    Array.from({ length: 60 }, () => {
      const pick = (): string => words[Math.floor(rnd() * (rnd() < 0.7 ? 3 : 5))] as string;
      const include = Array.from({ length: 1 + Math.floor(rnd() * 3) }, pick);
      return {
        include,
        exclude: rnd() < 0.25 ? ['nope'] : [],
        needs: [[0], [0, 1], [1, 2], [0, 1, 2]][Math.floor(rnd() * 4)] as number[],
        ranges: rnd() < 0.2 ? [{ from: 'notes/1', to: 'notes/3' }] : undefined,
        // Mostly pages within the top documents' 16, some deeper.
        limit: 1 + Math.floor(rnd() * (rnd() < 0.8 ? 6 : 15)),
        offset: rnd() < 0.2 ? Math.floor(rnd() * 30) : 0,
      };
    });
  let tops = 0;
  const same = (index: RankIndex, q: PlainQuery, label: string): void => {
    const stats = { scored: 0, topDocs: false };
    expect(rankPlain(index, q, stats), `${label}: ${JSON.stringify(q)}`).to.deep.equal(rankPlain(index, q, undefined, { topDocs: false }));
    if (stats.topDocs) tops++;
  };

  const filler = (n: number): string => Array.from({ length: n }, () => 'filler').join(' ');
  /** A small index whose lists of 8 postings or more keep top documents, and how to add one (its rowid back). */
  const small = (topSize: number): { index: RankIndex; put(text: string): number } => {
    const index = new RankIndex({ topFrom: 8, topSize });
    let rowid = 0;
    return {
      index,
      put: (text) => {
        index.put({ path: `notes/${rowid}.md`, text, need: 0, rowid: ++rowid });
        return rowid;
      },
    };
  };
  /** That `q` takes the top documents and finds `id` first and alone, as the walk does. */
  const findsThroughTop = (index: RankIndex, q: PlainQuery, id: number): void => {
    const stats = { scored: 0, topDocs: false };
    const rows = rankPlain(index, q, stats);
    expect(stats.topDocs).to.equal(true);
    expect(rows.map((r) => r.id)).to.deep.equal([id]);
    expect(rows).to.deep.equal(rankPlain(index, q, undefined, { topDocs: false }));
  };

  for (const seed of [1, 2, 3]) {
    it(`same pages through writes, deletes, read ranks, rollbacks and compactions (seed ${seed})`, () => {
      const rnd = random(seed * 104729);
      const index = new RankIndex({ topFrom: 64, topSize: 16, compactAt: seed === 3 ? 2000 : undefined });
      // A few paths hold "common" (path matches rank first): top documents hold them all, up to their size.
      const path = (i: number): string => (rnd() < 0.004 ? `common/${i}.md` : `notes/${i}.md`);
      tops = 0;
      let serial = 0;
      const paths: string[] = [];
      for (; serial < 1500; serial++) {
        paths.push(path(serial));
        index.put({ path: paths[serial] as string, text: body(rnd, 20 + Math.floor(rnd() * 150)), need: Math.floor(rnd() * 3), rowid: serial + 1 });
      }
      for (const q of queries(rnd)) same(index, q, 'initial');
      for (let step = 0; step < 12; step++) {
        const rollback = rnd() < 0.3;
        index.begin();
        for (let k = 0; k < 40; k++) {
          const roll = rnd();
          const at = paths[Math.floor(rnd() * paths.length)] as string;
          // Long bodies on some steps, short on others: avgdl moves after the top documents were made.
          // Some short and dense in the query words: new best matches, among documents no top documents cover yet.
          if (roll < 0.1) index.put({ path: at, text: `${body(rnd, 4)} ${words[Math.floor(rnd() * 3)]} common other common`, need: 0, rowid: ++serial });
          else if (roll < 0.4) index.put({ path: at, text: body(rnd, step % 2 === 0 ? 300 : 10), need: Math.floor(rnd() * 3), rowid: ++serial });
          else if (roll < 0.6) index.remove(at);
          else if (roll < 0.75) index.setNeed(at, Math.floor(rnd() * 3));
          else {
            paths.push(path(serial));
            index.put({ path: paths[paths.length - 1] as string, text: body(rnd, 20 + Math.floor(rnd() * 150)), need: 0, rowid: ++serial });
          }
        }
        // Queried inside the transaction too: top documents made now must still hold after its rollback.
        for (const q of queries(rnd).slice(0, 10)) same(index, q, `step ${step}, staged`);
        if (rollback) index.rollback();
        else index.commit();
        for (const q of queries(rnd)) same(index, q, `step ${step}`);
      }
      // Most queries are of long lists only (the others walk): 60 + 12 × 70 in all.
      expect(tops).to.be.above(400);
    });
  }

  it('scores a fraction of what the walk scores for two common words, with the same page', () => {
    const rnd = random(77);
    const index = new RankIndex({ topFrom: 64, topSize: 32 });
    for (let i = 0; i < 3000; i++) index.put({ path: `notes/${i}.md`, text: body(rnd, 50 + Math.floor(rnd() * 150)), need: 0, rowid: i + 1 });
    for (const include of [['common', 'other'], ['other', 'common', 'other'], ['common']]) {
      const q = { include, exclude: [], needs: [0], limit: 10, offset: 0 };
      const top = { scored: 0 };
      const walk = { scored: 0 };
      expect(rankPlain(index, q, top)).to.deep.equal(rankPlain(index, q, walk, { topDocs: false }));
      expect(walk.scored, include.join(' ')).to.be.above(30);
      expect(top.scored, include.join(' ')).to.be.below(walk.scored / 2);
    }
  });

  it('looks up a top document of one list that is newer than the other list\'s top documents', () => {
    const { index, put } = small(4);
    // Each word in a third of 600 documents; three strong in both (the best until `best` comes).
    for (let i = 0; i < 600; i++) put(`${i % 3 === 0 ? 'common' : ''} ${i % 3 === 1 || i % 9 === 0 ? 'other' : ''} ${filler(20 + (i % 40))}`);
    for (let i = 0; i < 3; i++) put(`common other common other ${filler(8)}`);
    const q = { include: ['common', 'other'], exclude: [], needs: [0], limit: 1, offset: 0 };
    expect(rankPlain(index, q)).to.deep.equal(rankPlain(index, q, undefined, { topDocs: false }));
    // The best match comes, then enough of "other" alone that its top documents are made again (with it
    // among them) while those of "common" still end before it: its share of "common" is unknown there.
    const best = put('common other common other');
    for (let i = 0; i < 100; i++) put(`other ${filler(20)}`);
    findsThroughTop(index, q, best);
  });

  it('bounds a top document by its share grown with avgdl since the top documents were made', () => {
    const { index, put } = small(8);
    // Short documents (avgdl ~11): "common" in a third (its IDF counts), "other" in half (its IDF floored).
    const short = (i: number): string => `${i % 3 === 0 ? 'common' : 'filler'} ${i % 2 === 0 ? 'other' : 'filler'} ${filler(5 + (i % 7))}`;
    for (let i = 0; i < 300; i++) put(short(i));
    // Three short and strong in both: the best while avgdl is small, and in both lists' top documents.
    for (let i = 0; i < 3; i++) put(`common common other other ${filler(6)}`);
    // A long one full of "common": a top document of it (below the strong ones), not of "other".
    const long = put(`${Array.from({ length: 30 }, () => 'common').join(' ')} other ${filler(300)}`);
    for (let i = 0; i < 100; i++) put(short(i));
    const q = { include: ['common', 'other'], exclude: [], needs: [0], limit: 1, offset: 0 };
    expect(rankPlain(index, q).map((r) => r.id)).to.not.deep.equal([long]);
    // Long documents with "other" only (its IDF stays floored): avgdl grows thirty-fold, the top documents of
    // "common" stay, and the long one's share of it grows past the strong ones'.
    for (let i = 0; i < 300; i++) put(`other ${filler(1000)}`);
    findsThroughTop(index, q, long);
  });

  it('with a slice runner, a query takes the top documents it holds and has due ones made after it, not by it', () => {
    const rnd = random(11);
    const work: Array<(until: () => boolean) => boolean> = [];
    const index = new RankIndex({ topFrom: 64, topSize: 16, slices: (step, what) => (what === 'top documents' ? work.push(step) : step(() => false)) });
    let rowid = 0;
    const put = (n: number): void => {
      for (let i = 0; i < n; i++) index.put({ path: `notes/${rowid}.md`, text: body(rnd, 60), need: 0, rowid: ++rowid });
    };
    put(600);
    const q: PlainQuery = { include: ['common', 'other'], exclude: [], needs: [0], limit: 5, offset: 0 };
    // None held yet: the query walks, and asks for them once.
    same(index, q, 'first');
    expect(work, 'made after the first query').to.have.length(1);
    const before = index.bytes;
    const drain = (): void => {
      const step = work.shift() as (until: () => boolean) => boolean;
      // One list a call, as slices stop when told.
      while (!step(() => true));
    };
    drain();
    expect(index.bytes, 'made by the runner').to.be.above(before);
    same(index, q, 'with them');
    // The lists grow by far more than an eighth: the query takes the stale ones (still right) and asks again.
    put(300);
    const stale = index.bytes;
    same(index, q, 'stale');
    expect(index.bytes, 'nothing made by the query').to.equal(stale);
    expect(work).to.have.length(1);
    drain();
    expect(index.bytes, 'made again by the runner').not.to.equal(stale);
    same(index, q, 'made again');
    expect(work).to.have.length(0);
  });
});
