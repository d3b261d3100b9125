import { expect } from 'chai';
import { PostingPool } from '../../../src/storage/search/postingPool.js';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { rankPlain, type PlainQuery } from '../../../src/storage/search/rankQuery.js';
import { random } from '../../support/random.js';

/**
 * Block-max in the ranking index (rankQuery.ts): a top-k over long lists skips the blocks that cannot reach it,
 * and still answers what scoring every match answers (the differential test, rankEngine.test.ts, holds it to
 * FTS5; this one holds it to the same query without a top-k to stop early, and counts what it scored).
 */
describe('storage/search: block-max skips what cannot reach the top', () => {
  const rnd = random(4242);
  const index = new RankIndex();
  const words = ['common', 'other', 'filler', 'word', 'text'];
  for (let i = 0; i < 3000; i++) {
    // Every item holds "common" and "other", a few times each, among filler of varying length.
    const tokens = [
      ...Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => 'common'),
      ...Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => 'other'),
      ...Array.from({ length: 20 + Math.floor(rnd() * 200) }, () => words[2 + Math.floor(rnd() * 3)] as string),
    ];
    index.put({ path: `notes/${String(i).padStart(5, '0')}.md`, text: tokens.join(' '), need: 0, rowid: i + 1 });
  }
  // One item with "common" in its path too: path matches rank first, whatever their blocks' scores.
  index.put({ path: 'common/zz.md', text: 'other filler', need: 0, rowid: 5000 });
  const all = (q: Omit<PlainQuery, 'limit' | 'offset'>) => rankPlain(index, { ...q, limit: 10_000, offset: 0 });

  for (const include of [['common'], ['common', 'other'], ['other', 'common', 'other']]) {
    it(`scores a fraction of the matches of ${include.join(' ')} for a page of 10, with the same page`, () => {
      const q = { include, exclude: [], needs: [0] };
      const stats = { scored: 0 };
      const page = rankPlain(index, { ...q, limit: 10, offset: 0 }, stats);
      const everything = all(q);
      expect(page).to.deep.equal(everything.slice(0, 10));
      expect(page[0]?.path).to.equal('common/zz.md');
      expect(everything.length).to.be.at.least(3000);
      // Without block-max every match is scored (3,001).
      expect(stats.scored).to.be.below(everything.length / 3);
    });
  }

  it('pages deep and with exclusions alike', () => {
    index.put({ path: 'notes/excluded.md', text: 'common common common common other nope', need: 0, rowid: 6000 });
    for (const [offset, limit] of [[0, 1], [5, 20], [100, 50]] as const) {
      const q = { include: ['common', 'other'], exclude: ['nope'], needs: [0] };
      expect(rankPlain(index, { ...q, limit, offset })).to.deep.equal(all(q).slice(offset, offset + limit));
    }
  });

  it('lays a long list out in runs of consecutive blocks, however its appends interleave with others', () => {
    /** Two lists appended in turn, the first asking for runs of `run` blocks: its chain, and the pool. */
    const build = (run: number): { pool: PostingPool; heads: number[] } => {
      const pool = new PostingPool();
      const heads = [pool.allocate(), pool.allocate()];
      const tails = heads.map((b) => PostingPool.start(b));
      for (let doc = 0; doc < 2000; doc++) {
        for (const list of [0, 1]) tails[list] = pool.append(tails[list] as number, doc, 1, 3, 0, 3, 100, list === 0 ? run : 1);
      }
      return { pool, heads };
    };
    const chain = (pool: PostingPool, head: number): number[] => {
      const out: number[] = [];
      for (let b = head; b !== 0; b = pool.next(b)) out.push(b);
      return out;
    };
    const consecutive = (blocks: number[]): number => blocks.slice(1).filter((b, i) => b === (blocks[i] as number) + 1).length;
    const runs = build(8);
    const long = chain(runs.pool, runs.heads[0] as number);
    expect(long.length).to.be.above(50);
    // Every step but the one into each new run of 8 (and out of the first block, allocated alone) is to the next block.
    expect(consecutive(long)).to.be.at.least(Math.floor(((long.length - 1) * 7) / 8) - 1);
    // Without runs, the two lists' blocks alternate.
    const single = build(1);
    expect(consecutive(chain(single.pool, single.heads[0] as number))).to.be.below(long.length / 8);
    // Both lists still decode to every document, in order.
    for (const head of runs.heads) {
      const docs = new Int32Array(2048);
      const n = runs.pool.decode(head, docs, new Int32Array(2048), new Int32Array(2048), new Uint8Array(2000), 255);
      expect(n).to.equal(2000);
      expect(Array.from(docs.subarray(0, n)).every((d, i) => d === i)).to.equal(true);
    }
  });
});
